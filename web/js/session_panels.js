// The session's plots: trajectory and roofline (Plotly), the utilisation gauges (SVG, gauge.js)
// and the 3D landscape (canvas, scatter3d.js). Each render function takes the panel element and
// the page's state (app.js) and redraws in place.
import {
  bestSoFar, fmtPercent, fmtSpeedup, fmtUs, landscapeAxes, roofLines, secondsBetween,
} from "./model.js";
import { gaugeSvg } from "./gauge.js";
import { VERDICT_COLOURS, layout, plot, rendered } from "./plots.js";
import { drawScatter3d } from "./scatter3d.js";

// An attempt's hover text, as lines: what it is, its runtime, what it tried.
function hoverLines(a) {
  return [`#${a.number} ${a.verdict} ${fmtSpeedup(a.speedup)}`, fmtUs(a.runtime_us),
          (a.intent && a.intent.title) || a.description || ""];
}

function hover(a) {
  return hoverLines(a).join("<br>").slice(0, 300);
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
  const traces = [
    { x: best.map((p) => p.elapsed), y: best.map((p) => p.best), name: "best so far",
      mode: "lines", line: { shape: "hv", color: "#0969da", width: 2 }, hoverinfo: "skip" },
    { x: correct.map(xOf), y: speeds, name: "correct", mode: "markers", type: "scatter",
      marker: { color: VERDICT_COLOURS.correct, size: 8 }, text: correct.map(hover),
      hoverinfo: "text", customdata: correct.map((a) => a.number) },
    { x: other.map(xOf), y: other.map(() => floor), name: "not correct", mode: "markers",
      marker: { color: VERDICT_COLOURS.incorrect, symbol: "x", size: 8 },
      text: other.map(hover), hoverinfo: "text", customdata: other.map((a) => a.number) },
  ];
  if (state.selected !== null) {
    const s = attempts.find((a) => a.number === state.selected);
    if (s) {
      traces.push({ x: [xOf(s)], y: [s.correct && s.speedup ? s.speedup : floor],
                    name: `selected #${s.number}`, mode: "markers", hoverinfo: "skip",
                    marker: { size: 16, color: "rgba(0,0,0,0)", line: { color: "#000", width: 2 } } });
    }
  }
  const div = plot(panel, traces, layout({
    xaxis: { title: { text: overTime ? "seconds since the session began" : "attempt" },
             ...(overTime ? {} : { dtick: Math.max(1, Math.ceil(attempts.length / 12)) }) },
    yaxis: { title: { text: "speedup vs eager" }, type: "log" },
  }));
  if (!div.dataset.bound) {
    div.dataset.bound = "1";
    div.on("plotly_click", (ev) => {
      const n = ev.points && ev.points[0] && ev.points[0].customdata;
      if (typeof n === "number") onSelect(n);
    });
  }
  rendered(panel, "ready");
}

export function renderRoofline(panel, state) {
  const d = state.detail;
  const pts = d ? d.attempts.filter((a) => a.roofline && a.roofline.intensity > 0) : [];
  if (!pts.length || !d.device) {
    return rendered(panel, "empty", "no attempt with roofline figures (the evaluator reports " +
      "them for every timed attempt)");
  }
  const xs = pts.map((a) => a.roofline.intensity);
  const roof = roofLines(d.device.bandwidth_bytes_per_s, d.device.peak_flops,
                         Math.min(...xs), Math.max(...xs));
  const traces = [];
  if (roof) {
    traces.push({ x: roof.x, y: roof.y, name: `roofs (${d.device.name || "device"})`,
                  mode: "lines", line: { color: "#57606a", width: 2 }, hoverinfo: "skip" });
  }
  traces.push({
    x: xs, y: pts.map((a) => a.roofline.achieved_flops), mode: "markers", name: "attempts",
    text: pts.map((a) => `${hover(a)}<br>${fmtPercent(a.roofline.fraction_of_speed_of_light)}` +
                         " of speed of light"),
    hoverinfo: "text",
    marker: { size: 9, color: pts.map((a) => (a.correct ? a.speedup || 0 : 0)),
              colorscale: "Viridis", showscale: true, colorbar: { title: { text: "speedup" }, thickness: 10 } },
  });
  plot(panel, traces, layout({
    xaxis: { type: "log", title: { text: "arithmetic intensity (FLOP/byte)" } },
    yaxis: { type: "log", title: { text: "achieved FLOP/s" } },
    showlegend: true,
  }));
  rendered(panel, "ready");
}

export function renderUtilisation(panel, state) {
  const d = state.detail;
  const timed = d ? d.attempts.filter((a) => a.roofline) : [];
  if (!timed.length) return rendered(panel, "empty", "no timed attempt yet");
  const best = d.session.best_attempt !== null
    ? timed.find((a) => a.number === d.session.best_attempt) || timed[0] : timed[0];
  const sel = timed.find((a) => a.number === state.selected) || timed[timed.length - 1];
  panel.querySelector(".body").innerHTML = `<div class="gauges">${[
    gaugeSvg(best.roofline.bandwidth_fraction, `best #${best.number}: bandwidth`),
    gaugeSvg(best.roofline.compute_fraction, `best #${best.number}: compute`),
    gaugeSvg(sel.roofline.bandwidth_fraction, `selected #${sel.number}: bandwidth`),
    gaugeSvg(sel.roofline.compute_fraction, `selected #${sel.number}: compute`),
  ].join("")}</div>`;
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
                       points, colourTitle: "speedup" }, onSelect);
  rendered(panel, "ready");
}

function fmtAxisValue(v) {
  if (v === null || v === undefined) return "–";
  return typeof v === "number" ? String(Number(v.toPrecision(6))) : JSON.stringify(v);
}
