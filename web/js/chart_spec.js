// Plotly traces and layout for one chart of chart_data (src/charts/data.hpp; docs/charts.md): the
// same numbers `openkernel charts` draws with gnuplot. Pure (no DOM), tested by node.
// Kinds: bars (categories, series[].values), box (series[].values), lines and scatter
// (series[].x, .y, .text), heatmap (x.categories, y.categories, z, text).

function axis(a) {
  if (!a) return {};
  const out = { title: { text: a.label || "" } };
  if (a.scale === "log") out.type = "log";
  if (a.scale === "category") out.type = "category";
  if (Array.isArray(a.range)) out.range = a.range;
  return out;
}

export function chartSpec(chart) {
  const series = chart.series || [];
  let traces = [];
  const extra = {};
  if (chart.kind === "bars") {
    traces = series.map((s) => ({
      type: "bar", name: s.hardware ? `${s.name} (${s.hardware})` : s.name,
      x: chart.categories, y: s.values,
    }));
    extra.barmode = "group";
  } else if (chart.kind === "box") {
    traces = series.map((s) => ({ type: "box", name: s.name, y: s.values, boxpoints: "all",
                                  jitter: 0.3, pointpos: 0 }));
  } else if (chart.kind === "lines" || chart.kind === "scatter") {
    traces = series.map((s) => ({
      type: "scatter", name: s.name, x: s.x, y: s.y, text: s.text,
      mode: chart.kind === "lines" || s.frontier ? "lines+markers" : "markers",
      line: s.frontier ? { dash: "dot", shape: "hv" } : undefined,
    }));
  } else if (chart.kind === "heatmap") {
    traces = [{ type: "heatmap", x: chart.x && chart.x.categories, y: chart.y && chart.y.categories,
                z: chart.z, text: chart.text, hoverinfo: "text", colorscale: "Viridis",
                colorbar: { title: { text: chart.z_label || "" } } }];
  } else {
    return null;
  }
  const layout = {
    title: { text: chart.title, font: { size: 13 } },
    xaxis: chart.kind === "heatmap" ? { title: { text: (chart.x && chart.x.label) || "" } } : axis(chart.x),
    yaxis: chart.kind === "heatmap" ? { title: { text: (chart.y && chart.y.label) || "" } } : axis(chart.y),
    ...extra,
  };
  return { traces, layout };
}
