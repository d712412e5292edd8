// The panels across sessions: convergence (best so far against attempts and wall time),
// cost efficiency (speedup against spend, with the frontier) and strategy statistics (per
// strategy and problem class: win rate, correctness, geomean, cost, frontier).
import { escapeHtml, fmtPercent, fmtSpeedup, fmtUsd, paretoFrontier, strategyRows } from "./model.js";
import { drawChart } from "./chart_view.js";
import { widthOf } from "./session_panels.js";
import { rendered } from "./plots.js";

// One colour per session, the same in both convergence plots.
const PALETTE = ["#0969da", "#bc4c00", "#1a7f37", "#8250df", "#cf222e", "#9a6700", "#1b7c83",
                 "#6e7781", "#bf3989", "#0550ae"];

function label(s) {
  return `${s.id} (${s.name}, ${s.model})`;
}

// Sessions with at least one correct attempt, the current one last (drawn on top).
function withCurves(agg, current) {
  const ss = agg.sessions.filter((s) => s.curve.some((p) => p[2] !== null));
  return [...ss.filter((s) => s.id !== current), ...ss.filter((s) => s.id === current)];
}

export function renderConvergence(panel, state) {
  const agg = state.aggregates;
  const sessions = agg ? withCurves(agg, state.id) : [];
  if (!sessions.length) return rendered(panel, "empty", "no session has a correct attempt yet");
  const colour = new Map(agg.sessions.map((s, i) => [s.id, PALETTE[i % PALETTE.length]]));
  const line = (s, xi) => {
    const mine = s.id === state.id;
    return { name: label(s), group: s.id, mode: "lines", shape: "hv", width: mine ? 3 : 1.5,
             colour: colour.get(s.id), opacity: mine ? 1 : 0.7, legend: xi === 0,
             points: s.curve.filter((p) => p[2] !== null).map((p) => ({ x: p[xi], y: p[2] })) };
  };
  drawChart(panel.querySelector(".body"), {
    height: 320, legend: true,
    plots: [{ x: { title: "attempts", integer: true }, y: { title: "best speedup so far", type: "log" },
              series: sessions.map((s) => line(s, 0)) },
            { x: { title: "seconds since the session began" }, y: { type: "log" },
              series: sessions.map((s) => line(s, 1)) }],
  }, { label: "best speedup so far of every session", width: widthOf(state, "convergence") });
  rendered(panel, "ready");
}

export function renderCost(panel, state) {
  const agg = state.aggregates;
  const sessions = agg ? agg.sessions.filter((s) => typeof s.best_speedup === "number") : [];
  if (!sessions.length) return rendered(panel, "empty", "no session has a best speedup yet");
  const byModel = new Map();
  for (const s of sessions) {
    if (!byModel.has(s.model)) byModel.set(s.model, []);
    byModel.get(s.model).push(s);
  }
  const models = [...byModel.entries()];
  const series = models.map(([model, ss], i) => ({
    name: model, mode: "markers", size: 10, colour: PALETTE[i % PALETTE.length],
    points: ss.map((s) => ({ x: s.cost_usd, y: s.best_speedup,
                             text: `${s.id}: ${fmtSpeedup(s.best_speedup)} for ${fmtUsd(s.cost_usd)}` })),
  }));
  const front = paretoFrontier(sessions.map((s) => ({ x: s.cost_usd, y: s.best_speedup })));
  series.push({ name: "frontier", mode: "lines", shape: "hv", dash: "dot", colour: "#57606a",
                hover: false, points: front });
  drawChart(panel.querySelector(".body"), {
    height: 300, legend: true,
    plots: [{ x: { title: "spent (USD)", zero: true }, y: { title: "best speedup", type: "log" }, series }],
  }, { label: "best speedup against spend, every session", width: widthOf(state, "cost") });
  rendered(panel, "ready");
}

export function renderStrategies(panel, state) {
  const data = state.strategies;
  const rows = data ? strategyRows(data).filter((r) => r.problems > 0) : [];
  if (!rows.length) {
    return rendered(panel, "empty", "no strategy has finished a problem yet (the population " +
      "learns at the end of every engine session)");
  }
  const body = panel.querySelector(".body");
  // The plot's element is kept across renders (its zoom and legend choices with it).
  let plotDiv = body.querySelector(":scope > .strategy-plot");
  if (!plotDiv) {
    body.textContent = "";
    plotDiv = document.createElement("div");
    plotDiv.className = "strategy-plot";
    body.appendChild(plotDiv);
  }
  body.querySelector(":scope > .scroll")?.remove();
  const classes = [...new Set(rows.map((r) => r.cls))];
  const series = classes.map((cls, i) => ({
    name: cls, mode: "markers", colour: PALETTE[i % PALETTE.length],
    points: rows.filter((r) => r.cls === cls).map((r) => ({
      x: r.correctness_rate, y: r.geomean_speedup, size: 8 + 2 * Math.min(r.problems, 10),
      symbol: r.frontier ? "star" : "circle",
      text: `${r.id} on ${r.cls}${r.frontier ? " (frontier)" : ""}\ngeomean ` +
            `${fmtSpeedup(r.geomean_speedup)}, correct ${fmtPercent(r.correctness_rate)}`,
    })),
  }));
  drawChart(plotDiv, {
    height: 240, legend: true,
    plots: [{ x: { title: "correctness rate", range: [-0.05, 1.05] },
              y: { title: "geomean speedup", type: "log" }, series }],
  }, { label: "geomean speedup against correctness, per strategy and class",
        width: widthOf(state, "strategies") });
  const table = document.createElement("div");
  table.className = "scroll";
  table.innerHTML = "<table><thead><tr><th>strategy</th><th>class</th><th>problems</th>" +
    "<th>win rate</th><th>correct</th><th>geomean</th><th>cost / problem</th><th>frontier</th>" +
    "</tr></thead><tbody>" + rows.map((r) => `<tr><td>${escapeHtml(r.id)}</td><td>${escapeHtml(r.cls)}</td>` +
      `<td>${r.problems}</td><td>${fmtPercent(r.win_rate)}</td><td>${fmtPercent(r.correctness_rate)}</td>` +
      `<td>${fmtSpeedup(r.geomean_speedup)}</td><td>${fmtUsd(r.cost_usd)}</td>` +
      `<td>${r.frontier ? "★" : ""}</td></tr>`).join("") + "</tbody></table>";
  body.appendChild(table);
  rendered(panel, "ready");
}
