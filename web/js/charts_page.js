// The Charts page: every chart of GET /api/charts drawn with Plotly, with its notes.
import { chartSpec } from "./chart_spec.js";
import { escapeHtml } from "./model.js";
import { CONFIG, layout, plotly, rendered } from "./plots.js";


export function renderCharts(panel, data) {
  const charts = (data && data.charts) || [];
  if (!charts.length) return rendered(panel, "empty", (data && data.note) || "no charts");
  const body = panel.querySelector(".body");
  body.textContent = "";
  for (const chart of charts) {
    const spec = chartSpec(chart);
    const box = document.createElement("figure");
    box.className = "chart";
    box.dataset.chart = chart.id;
    body.appendChild(box);
    const div = document.createElement("div");
    box.appendChild(div);
    if (spec) {
      plotly().react(div, spec.traces, layout({ ...spec.layout, height: 360,
                                               margin: { l: 64, r: 16, t: 40, b: 90 } }), CONFIG);
    } else {
      div.textContent = `${chart.title}: a chart of kind ${chart.kind} this page cannot draw`;
    }
    const notes = document.createElement("figcaption");
    notes.innerHTML = (chart.notes || []).map(escapeHtml).join("<br>");
    box.appendChild(notes);
  }
  rendered(panel, "ready");
}
