// A chart (chart.js) on the page, with what a reader does to it: hover a point for its tooltip,
// click it (onClick with the point's id), drag a box to zoom into it (across one axis when the
// drag is flat or upright), double-click to restore the ranges, click a legend entry to hide or
// show its series (in every plot of the figure). The zoom and the hidden entries survive a
// redraw with new data (the live page redraws on every new attempt).
//
// drawChart(body, spec, {onClick, label, width}) draws into `body` (replacing what else is
// there; `width`: the body's width when the caller knows it, which spares a layout of the page)
// and returns the chart's element, a div.chart-view whose okChart holds the state and the layout
// (the browser tests read layout.plots[i].x.domain).
import { figureSvg, layoutFigure, legendEntries, markerSvg, nearestHit, plotAt, zoomOf } from "./chart.js";
import { escapeHtml } from "./model.js";

let charts = 0;  // ids for the charts' clip paths and gradients

export function drawChart(body, spec, { onClick = null, label = "", width = 0 } = {}) {
  let root = body.querySelector(":scope > .chart-view");
  if (!root) {
    body.textContent = "";
    root = document.createElement("div");
    root.className = "chart-view";
    root.innerHTML = '<div class="figure"></div><div class="legend"></div><div class="tooltip" hidden></div>';
    body.appendChild(root);
    root.okChart = { uid: `okc${++charts}`, view: { hidden: new Set(), zoom: [] } };
    bind(root);
  }
  const st = root.okChart;
  if (st.spec && st.spec.key !== spec.key) st.view.zoom = [];  // other axes: the zoom is moot
  Object.assign(st, { spec, onClick, label });
  render(root, width);
  drawLegend(root);
  return root;
}

function render(root, width = 0) {
  const st = root.okChart;
  st.width = width || root.clientWidth || 600;
  st.layout = layoutFigure(st.spec, st.width, st.view);
  root.querySelector(".figure").innerHTML = figureSvg(st.layout, st.uid, st.label);
}

function drawLegend(root) {
  const st = root.okChart;
  const entries = st.spec.legend === false ? [] : legendEntries(st.spec);
  root.querySelector(".legend").innerHTML = entries.length < 2 && !st.spec.legend ? "" : entries.map((e) => {
    const swatch = e.symbol ? markerSvg(e.symbol, 9, 7, 8, e.colour)
      : `<path d="M1,7H17" stroke="${e.colour}" stroke-width="2"${e.dash ? ' stroke-dasharray="2,3"' : ""}/>`;
    return `<button type="button" class="legend-item${st.view.hidden.has(e.group) ? " off" : ""}" ` +
      `data-group="${escapeHtml(e.group)}" aria-pressed="${!st.view.hidden.has(e.group)}">` +
      `<svg width="18" height="14">${swatch}</svg>${escapeHtml(e.name)}</button>`;
  }).join("");
}

function showTip(root, hit) {
  const tip = root.querySelector(".tooltip");
  const lines = String(hit.point.text ?? "").split("\n").filter(Boolean);
  if (!lines.length) return void (tip.hidden = true);
  tip.replaceChildren(...lines.map((line) => {
    const div = document.createElement("div");
    div.textContent = line;
    return div;
  }));
  tip.hidden = false;
  tip.style.left = `${Math.max(0, Math.min(hit.x + 12, root.clientWidth - tip.offsetWidth - 4))}px`;
  tip.style.top = `${Math.max(0, hit.y - tip.offsetHeight - 8)}px`;
}

function bind(root) {
  const st = () => root.okChart;
  const figure = root.querySelector(".figure");
  const tip = root.querySelector(".tooltip");
  let drag = null;
  const local = (ev) => {
    const r = figure.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  };
  const hitAt = (p) => nearestHit(st().layout.hits, p.x, p.y);
  figure.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    const p = local(ev);
    const plot = plotAt(st().layout, p.x, p.y);
    if (plot < 0) return;
    drag = { plot, x0: p.x, y0: p.y, box: null };
    figure.setPointerCapture(ev.pointerId);
  });
  figure.addEventListener("pointermove", (ev) => {
    const p = local(ev);
    if (!drag) {
      const i = hitAt(p);
      figure.style.cursor = i >= 0 && st().layout.hits[i].point.id !== undefined ? "pointer" : "crosshair";
      if (i >= 0) showTip(root, st().layout.hits[i]);
      else tip.hidden = true;
      return;
    }
    tip.hidden = true;
    const { box } = st().layout.plots[drag.plot];
    const x = Math.min(Math.max(p.x, box.left), box.left + box.width);
    const y = Math.min(Math.max(p.y, box.top), box.top + box.height);
    if (!drag.box) {
      drag.box = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      drag.box.setAttribute("class", "zoombox");
      figure.querySelector("svg").appendChild(drag.box);
    }
    const wide = Math.abs(x - drag.x0) > 5, tall = Math.abs(y - drag.y0) > 5;
    const [bx, by] = [wide ? Math.min(x, drag.x0) : box.left, tall ? Math.min(y, drag.y0) : box.top];
    drag.box.setAttribute("x", bx);
    drag.box.setAttribute("y", by);
    drag.box.setAttribute("width", wide ? Math.abs(x - drag.x0) : box.width);
    drag.box.setAttribute("height", tall ? Math.abs(y - drag.y0) : box.height);
    drag.x1 = x; drag.y1 = y;
  });
  figure.addEventListener("pointerup", (ev) => {
    const d = drag;
    drag = null;
    if (!d) return;
    const zoom = d.box && zoomOf(st().layout.plots[d.plot], d.x0, d.y0, d.x1, d.y1);
    if (d.box) d.box.remove();
    if (zoom) {
      st().view.zoom[d.plot] = zoom;
      return render(root);
    }
    const i = hitAt(local(ev));
    const id = i >= 0 ? st().layout.hits[i].point.id : undefined;
    if (id !== undefined && st().onClick) st().onClick(id);
  });
  figure.addEventListener("pointerleave", () => { if (!drag) tip.hidden = true; });
  figure.addEventListener("dblclick", () => {
    st().view.zoom = [];
    render(root);
  });
  root.querySelector(".legend").addEventListener("click", (ev) => {
    const item = ev.target.closest(".legend-item");
    if (!item) return;
    const { hidden } = st().view;
    const group = item.dataset.group;
    if (hidden.has(group)) hidden.delete(group);
    else hidden.add(group);
    render(root);
    drawLegend(root);
  });
  // Drawn again when its width changes (not for the first notice, of the width it was drawn at).
  new ResizeObserver(() => {
    if (root.clientWidth && root.clientWidth !== st().width) render(root);
  }).observe(root);
}
