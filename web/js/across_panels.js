// The panels across sessions: convergence (best so far against attempts and wall time),
// cost efficiency (speedup against spend, with the frontier) and strategy statistics (per
// strategy and problem class: win rate, correctness, geomean, cost, frontier).
import { escapeHtml, fmtPercent, fmtSpeedup, fmtUsd, paretoFrontier, strategyRows } from "./model.js";
import { layout, plot, plotly, rendered } from "./plots.js";

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
  const trace = (s, xi, axes) => {
    const pts = s.curve.filter((p) => p[2] !== null);
    const mine = s.id === state.id;
    return { x: pts.map((p) => p[xi]), y: pts.map((p) => p[2]), name: label(s), mode: "lines",
             line: { shape: "hv", width: mine ? 3 : 1.5, color: colour.get(s.id) },
             opacity: mine ? 1 : 0.7,
             legendgroup: s.id, showlegend: xi === 0, xaxis: axes[0], yaxis: axes[1],
             hovertemplate: `${escapeHtml(s.id)}: %{y:.3f}x at %{x}<extra></extra>` };
  };
  const traces = [...sessions.map((s) => trace(s, 0, ["x", "y"])),
                  ...sessions.map((s) => trace(s, 1, ["x2", "y2"]))];
  plot(panel, traces, layout({
    grid: { rows: 1, columns: 2, pattern: "independent" }, height: 320,
    xaxis: { title: { text: "attempts" } }, yaxis: { title: { text: "best speedup so far" }, type: "log" },
    xaxis2: { title: { text: "seconds since the session began" } }, yaxis2: { type: "log" },
    legend: { orientation: "h", y: -0.25 },
  }));
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
  const traces = [...byModel.entries()].map(([model, ss]) => ({
    x: ss.map((s) => s.cost_usd), y: ss.map((s) => s.best_speedup), name: model, mode: "markers",
    marker: { size: 10 }, text: ss.map((s) => `${escapeHtml(s.id)}: ${fmtSpeedup(s.best_speedup)} for ` +
                                              `${fmtUsd(s.cost_usd)}`),
    hoverinfo: "text",
  }));
  const front = paretoFrontier(sessions.map((s) => ({ x: s.cost_usd, y: s.best_speedup })));
  traces.push({ x: front.map((p) => p.x), y: front.map((p) => p.y), name: "frontier",
                mode: "lines", line: { shape: "hv", dash: "dot", color: "#57606a" }, hoverinfo: "skip" });
  plot(panel, traces, layout({
    xaxis: { title: { text: "spent (USD)" }, rangemode: "tozero" },
    yaxis: { title: { text: "best speedup" }, type: "log" },
  }));
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
  body.textContent = "";
  const plotDiv = document.createElement("div");
  plotDiv.className = "plot";
  body.appendChild(plotDiv);
  const classes = [...new Set(rows.map((r) => r.cls))];
  const traces = classes.map((cls) => {
    const rs = rows.filter((r) => r.cls === cls);
    return { x: rs.map((r) => r.correctness_rate), y: rs.map((r) => r.geomean_speedup), name: cls,
             mode: "markers", text: rs.map((r) => `${r.id} on ${r.cls}${r.frontier ? " (frontier)" : ""}`),
             hoverinfo: "text",
             marker: { size: rs.map((r) => 8 + 2 * Math.min(r.problems, 10)),
                       symbol: rs.map((r) => (r.frontier ? "star" : "circle")) } };
  });
  plotly().react(plotDiv, traces, layout({
    height: 240, xaxis: { title: { text: "correctness rate" }, range: [-0.05, 1.05] },
    yaxis: { title: { text: "geomean speedup" }, type: "log" },
  }), { displaylogo: false, responsive: true });
  plotDiv.okPlotly = plotly();  // the Plotly that drew it (plots.js, swapPlots)
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
