// The session's plots: trajectory and roofline (SVG charts, chart_view.js), the utilisation
// gauges (SVG, gauge.js) and the 3D landscape (canvas, scatter3d.js). Each render function takes
// the panel element and the page's state (app.js) and redraws in place.
//
// An attempt whose evaluation carries a measured profile (`profile`: ncu's or Proton's kernel
// metrics, docs/profiling.md) shows those numbers, marked as measured, beside the analytical
// estimate the roofline figures give every timed attempt.
import {
  bestSoFar, escapeHtml, fmtPercent, fmtSpeedup, fmtUs, landscapeAxes, roofLines, secondsBetween,
} from "./model.js";
import { drawChart } from "./chart_view.js";
import { gaugeSvg } from "./gauge.js";
import { VERDICT_COLOURS, rendered } from "./plots.js";
import { drawScatter3d } from "./scatter3d.js";

// A panel body's width as measured before the panels were drawn (app.js), or undefined.
export const widthOf = (state, name) => (state.widths ? state.widths[name] : undefined);

// An attempt's hover text, as lines: what it is, its runtime, what it tried.
function hoverLines(a) {
  return [`#${a.number} ${a.verdict} ${fmtSpeedup(a.speedup)}`, fmtUs(a.runtime_us),
          (a.intent && a.intent.title) || a.description || ""];
}

function hover(a) {
  return hoverLines(a).filter(Boolean).map((l) => l.slice(0, 160)).join("\n");
}

export function renderTrajectory(panel, state, onSelect) {
  const d = state.detail;
  const attempts = d ? d.attempts : [];
  if (!attempts.length) return rendered(panel, "empty", "no attempt recorded yet");
  const overTime = state.trajectoryX === "time";
  const start = d.session.created_at;
  const xOf = (a) => (overTime ? secondsBetween(start, a.created_at) : a.number);
  const correct = attempts.filter((a) => a.correct && typeof a.speedup === "number");
  const speeds = correct.map((a) => a.speedup);
  const floor = speeds.length ? Math.min(...speeds, 1) / 1.5 : 0.5;
  const other = attempts.filter((a) => !(a.correct && typeof a.speedup === "number"));
  const best = bestSoFar(attempts, (a) => xOf(a)).filter((p) => p.best !== null);
  const point = (a, y) => ({ x: xOf(a), y, id: a.number, text: hover(a) });
  const series = [
    { name: "best so far", mode: "lines", shape: "hv", colour: "#0969da", width: 2, hover: false,
      points: best.map((p) => ({ x: p.elapsed, y: p.best })) },
    { name: "correct", mode: "markers", colour: VERDICT_COLOURS.correct,
      points: correct.map((a) => point(a, a.speedup)) },
    { name: "not correct", mode: "markers", symbol: "x", colour: VERDICT_COLOURS.incorrect,
      points: other.map((a) => point(a, floor)) },
  ];
  const s = state.selected !== null && attempts.find((a) => a.number === state.selected);
  if (s) {
    series.push({ name: `selected #${s.number}`, group: "selected", mode: "markers", symbol: "ring",
                  size: 16, colour: "#000", hover: false,
                  points: [{ x: xOf(s), y: s.correct && s.speedup ? s.speedup : floor }] });
  }
  drawChart(panel.querySelector(".body"), {
    height: 300, legend: true, key: state.trajectoryX,
    plots: [{ x: { title: overTime ? "seconds since the session began" : "attempt", integer: !overTime },
              y: { title: "speedup vs eager", type: "log" }, series }],
  }, { onClick: onSelect, label: "speedup of every attempt", width: widthOf(state, "trajectory") });
  rendered(panel, "ready");
}

// The measured roofline position of an attempt's profile, or null.
function measuredPoint(a) {
  const rf = a.profile && a.profile.roofline;
  return rf && rf.intensity > 0 && rf.flops_per_s > 0 ? rf : null;
}

const toolName = (p) => (p && p.tool) || (p && p.tier === "proton" ? "proton" : "ncu");

export function renderRoofline(panel, state, onSelect) {
  const d = state.detail;
  const pts = d ? d.attempts.filter((a) => a.roofline && a.roofline.intensity > 0) : [];
  const measured = d ? d.attempts.filter(measuredPoint) : [];
  if ((!pts.length && !measured.length) || !d.device) {
    return rendered(panel, "empty", "no attempt with roofline figures (the evaluator reports " +
      "them for every timed attempt)");
  }
  const xs = [...pts.map((a) => a.roofline.intensity), ...measured.map((a) => measuredPoint(a).intensity)];
  const roof = roofLines(d.device.bandwidth_bytes_per_s, d.device.peak_flops,
                         Math.min(...xs), Math.max(...xs));
  const series = [];
  if (roof) {
    series.push({ name: `roofs (${d.device.name || "device"})`, mode: "lines", colour: "#57606a",
                  width: 2, hover: false, points: roof.x.map((x, i) => ({ x, y: roof.y[i] })) });
  }
  series.push({
    name: "attempts (estimate)", mode: "markers", size: 9,
    points: pts.map((a) => ({
      x: a.roofline.intensity, y: a.roofline.achieved_flops, id: a.number,
      value: a.correct ? a.speedup || 0 : 0,
      text: `${hover(a)}\nestimate: ${fmtPercent(a.roofline.fraction_of_speed_of_light)} of speed of light`,
    })),
  });
  if (measured.length) {
    series.push({
      name: `measured (${toolName(measured[0].profile)})`, mode: "markers", symbol: "diamond",
      size: 11, colour: "#bc4c00",
      points: measured.map((a) => {
        const rf = measuredPoint(a);
        return { x: rf.intensity, y: rf.flops_per_s, id: a.number,
                 text: `${hover(a)}\nmeasured by ${toolName(a.profile)}: ${fmtFlops(rf.flops)} FLOP, ` +
                       `${fmtBytes(rf.dram_bytes)} DRAM over ${a.profile.kernels} kernel(s)` };
      }),
    });
  }
  drawChart(panel.querySelector(".body"), {
    height: 300, legend: true, colour: { title: "speedup" },
    plots: [{ x: { title: "arithmetic intensity (FLOP/byte)", type: "log" },
              y: { title: "achieved FLOP/s", type: "log" }, series }],
  }, { onClick: onSelect, label: "roofline of every timed attempt", width: widthOf(state, "roofline") });
  rendered(panel, "ready");
}

function fmtFlops(x) {
  return x >= 1e9 ? `${(x / 1e9).toPrecision(3)} G` : x >= 1e6 ? `${(x / 1e6).toPrecision(3)} M` : String(x);
}

function fmtBytes(x) {
  return x >= 1e9 ? `${(x / 1e9).toPrecision(3)} GB` : x >= 1e6 ? `${(x / 1e6).toPrecision(3)} MB`
    : `${Math.round(x)} B`;
}

// An attempt's gauges: measured by ncu when its profile has the throughputs, else the
// analytical estimate (the roofline figures' fractions of the roofs).
function gaugeSet(a, role) {
  const p = a.profile;
  const pct = (v) => (typeof v === "number" ? v / 100 : null);
  if (p && [p.dram_throughput_pct, p.sm_throughput_pct].some((v) => typeof v === "number")) {
    const kernel = String(p.kernel || "").slice(0, 60);
    return `<figure class="gauge-set" data-source="measured" data-attempt="${a.number}">` +
      `<figcaption>${role} #${a.number}: measured by ${toolName(p)} (${p.kernels} kernel${p.kernels === 1 ? "" : "s"}` +
      `${kernel ? `, longest ${escapeHtml(kernel)}` : ""})</figcaption><div class="gauge-row">` +
      gaugeSvg(pct(p.dram_throughput_pct), `${role} #${a.number}: DRAM throughput (${toolName(p)})`) +
      gaugeSvg(pct(p.sm_throughput_pct), `${role} #${a.number}: SM throughput (${toolName(p)})`) +
      gaugeSvg(pct(p.achieved_occupancy_pct), `${role} #${a.number}: achieved occupancy (${toolName(p)})`) +
      "</div></figure>";
  }
  return `<figure class="gauge-set" data-source="estimate" data-attempt="${a.number}">` +
    `<figcaption>${role} #${a.number}: analytical estimate (roofline model)</figcaption>` +
    `<div class="gauge-row">${gaugeSvg(a.roofline.bandwidth_fraction, `${role} #${a.number}: bandwidth`)}` +
    `${gaugeSvg(a.roofline.compute_fraction, `${role} #${a.number}: compute`)}</div></figure>`;
}

export function renderUtilisation(panel, state) {
  const d = state.detail;
  const timed = d ? d.attempts.filter((a) => a.roofline) : [];
  if (!timed.length) return rendered(panel, "empty", "no timed attempt yet");
  const best = d.session.best_attempt !== null
    ? timed.find((a) => a.number === d.session.best_attempt) || timed[0] : timed[0];
  const sel = timed.find((a) => a.number === state.selected) || timed[timed.length - 1];
  panel.querySelector(".body").innerHTML =
    `<div class="gauges">${gaugeSet(best, "best")}${gaugeSet(sel, "selected")}</div>`;
  rendered(panel, "ready");
}

// A canvas-2D 3D scatter (scatter3d.js) rather than Plotly's WebGL one: on a machine without a
// GPU chromium runs WebGL in software, and Plotly's scatter3d is only in its full bundle
// (docs/dashboard.md, "Render time").
export function renderLandscape(panel, state, onSelect) {
  const d = state.detail;
  const attempts = d ? d.attempts : [];
  if (!attempts.length) return rendered(panel, "empty", "no attempt recorded yet");
  const axes = landscapeAxes(attempts, state.tree && state.tree.axes);
  const coord = (axis, a) => {
    const v = axis.value(a);
    if (v === null || v === undefined) return null;
    return axis.categories ? axis.categories.findIndex((c) => JSON.stringify(c) === JSON.stringify(v)) : v;
  };
  // Titles without the skill's prefix ("cpu-pointwise.schedule" -> "schedule"): they must fit.
  const short = (axis) => axis.title.slice(axis.title.lastIndexOf(".") + 1);
  const points = attempts.map((a) => ({
    id: a.number, coords: axes.map((axis) => coord(axis, a)),
    colour: a.correct ? a.speedup || 0 : 0,
    // What the attempt is, then where it sits: its value on each axis (its configuration).
    lines: [...hoverLines(a).filter(Boolean).map((l) => l.slice(0, 120)),
            ...axes.map((axis) => `${short(axis)}: ${fmtAxisValue(axis.value(a))}`)],
  }));
  const box = panel.querySelector(".body");
  box.classList.add("landscape");
  drawScatter3d(box, { axes: axes.map((axis) => ({ title: short(axis), categories: axis.categories })),
                       points, colourTitle: "speedup", width: widthOf(state, "landscape") }, onSelect);
  rendered(panel, "ready");
}

function fmtAxisValue(v) {
  if (v === null || v === undefined) return "–";
  return typeof v === "number" ? String(Number(v.toPrecision(6))) : JSON.stringify(v);
}
