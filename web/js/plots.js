// Plotly helpers every panel shares: one layout style, one config, and marking a panel rendered
// (its data-state, which the browser tests and the bench read). Plotly itself is a classic
// script that index.html loads async (#plotly-script): the page fetches its data and draws its
// text panels while Plotly downloads and evaluates; plotly() is null until then, and
// plotlyLoaded settles when it has run.
//
// That script is Plotly's basic bundle (scatter, bar, pie: every dashboard panel is a scatter;
// 1.2 MB, evaluated in about 60 % of the cartesian bundle's time). The Charts page also draws
// box plots and heatmaps: loadCartesian() loads the cartesian bundle (from the same versioned
// folder) when it is first opened, which replaces the global Plotly; swapPlots() then purges
// every plot the basic one drew, so that its panels are drawn again by the new one (a plot is
// only ever touched by the Plotly that drew it).

export function plotly() {
  return globalThis.Plotly || null;
}

export const plotlyLoaded = new Promise((resolve, reject) => {
  if (plotly()) return resolve(plotly());
  const script = document.getElementById("plotly-script");
  if (!script) return reject(new Error("the page has no #plotly-script"));
  script.addEventListener("load", () => resolve(plotly()));
  script.addEventListener("error", () => reject(new Error(`${script.src} could not be loaded`)));
});

let cartesian = null;

// Loads Plotly's cartesian bundle once; resolves to it (the global Plotly from then on).
export function loadCartesian() {
  if (!cartesian) {
    cartesian = plotlyLoaded.then(() => new Promise((resolve, reject) => {
      const basic = document.getElementById("plotly-script");
      const script = document.createElement("script");
      script.src = basic.src.replace(/plotly\.min\.js$/, "plotly-cartesian.min.js");
      script.addEventListener("load", () => resolve(plotly()));
      script.addEventListener("error", () => reject(new Error(`${script.src} could not be loaded`)));
      document.head.appendChild(script);
    }));
    cartesian.catch(() => { cartesian = null; });  // a failed load is tried again next time
  }
  return cartesian;
}

// Purges and removes every plot under `root` that another Plotly than the current one drew:
// its panel's next render draws it afresh.
export function swapPlots(root) {
  for (const div of root.querySelectorAll(".plot")) {
    if (!div.okPlotly || div.okPlotly === plotly()) continue;
    div.okPlotly.purge(div);
    div.remove();
  }
}

export const CONFIG = {
  displaylogo: false,
  responsive: true,
  modeBarButtonsToRemove: ["lasso2d", "select2d", "toImage"],
};

export const VERDICT_COLOURS = { correct: "#1a7f37", incorrect: "#cf222e" };

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

// Draws (or redraws in place) a plot into the panel's body; `config` adds to CONFIG.
export function plot(panel, traces, lay, config = {}) {
  const body = panel.querySelector(".body");
  let div = body.querySelector(".plot");
  if (!div) {
    body.textContent = "";
    div = document.createElement("div");
    div.className = "plot";
    body.appendChild(div);
  }
  plotly().react(div, traces, lay, { ...CONFIG, ...config });
  div.okPlotly = plotly();  // the Plotly that drew it (swapPlots)
  return div;
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
