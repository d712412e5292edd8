// What every panel shares: marking a panel rendered (its data-state, which the browser tests and
// the bench read), the verdicts' colours, and Plotly for the Charts page only. The dashboard's
// own plots are SVG charts (chart.js, chart_view.js); the Charts page draws box plots and
// heatmaps with Plotly's cartesian bundle, which loadPlotly() fetches when that page is first
// opened (a classic script from the same versioned folder as the page's modules), so the
// dashboard's first render never downloads or compiles it.

export function plotly() {
  return globalThis.Plotly || null;
}

let loading = null;

// Loads Plotly's cartesian bundle once; resolves to it.
export function loadPlotly() {
  if (!loading) {
    loading = new Promise((resolve, reject) => {
      if (plotly()) return resolve(plotly());
      const script = document.createElement("script");
      script.src = new URL("../vendor/plotly-cartesian.min.js", import.meta.url).href;
      script.addEventListener("load", () => resolve(plotly()));
      script.addEventListener("error", () => reject(new Error(`${script.src} could not be loaded`)));
      document.head.appendChild(script);
    });
    loading.catch(() => { loading = null; });  // a failed load is tried again next time
  }
  return loading;
}

export const CONFIG = {
  displaylogo: false,
  responsive: true,
  modeBarButtonsToRemove: ["lasso2d", "select2d", "toImage"],
};

export const VERDICT_COLOURS = { correct: "#1a7f37", incorrect: "#cf222e" };

// Plotly's layout for a chart of the Charts page.
export function layout(extra = {}) {
  return {
    margin: { l: 56, r: 16, t: 12, b: 44 },
    height: 300,
    font: { size: 11, family: "system-ui, sans-serif" },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "#fbfbfc",
    legend: { orientation: "h", y: -0.2 },
    hovermode: "closest",
    ...extra,
  };
}

// Marks a panel rendered: "ready" with data, "empty" with a message saying why there is none.
export function rendered(panel, state, message) {
  panel.dataset.state = state;
  panel.dataset.renders = String(Number(panel.dataset.renders || 0) + 1);
  if (state === "empty") {
    const body = panel.querySelector(".body");
    body.textContent = "";
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = message;
    body.appendChild(p);
  }
}
