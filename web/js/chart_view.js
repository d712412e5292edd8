// A chart (chart.js) on the page, with what a reader does to it: hover a point for its tooltip,
// click it (onClick with the point's id), drag a box to zoom into it (across one axis when the
// drag is flat or upright), double-click to restore the ranges, click a legend entry to hide or
// show its series (in every plot of the figure). The zoom and the hidden entries survive a
// redraw with new data (the live page redraws on every new attempt).
//
// drawChart(body, spec, {onClick, label, width}) draws into `body` (replacing what else is
// there; `width`: the body's width when the caller knows it, which spares a layout of the page)
// and returns the chart's element, a div.chart-view whose okChart holds the state and the layout
// (the browser tests read layout.plots[i].x.domain, layout.hits and markers, the canvas' draw
// list).
import {
  figureSvg, layoutFigure, legendEntries, markerList, markerSvg, nearestHit, overlaySvg, plotAt, zoomOf,
} from "./chart.js";
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

// The figure's three layers, bottom up: the SVG (axes, lines), the canvas of markers and the
// overlay SVG (front series, the hovered point's ring, the zoom box); the upper two let the
// pointer through to the SVG, where bind() listens.
function render(root, width = 0) {
  const st = root.okChart;
  st.width = width || root.clientWidth || 600;
  st.layout = layoutFigure(st.spec, st.width, st.view);
  st.markers = markerList(st.layout);
  const figure = root.querySelector(".figure");
  figure.innerHTML = figureSvg(st.layout, st.uid, st.label) +
    `<canvas class="markers" aria-hidden="true" data-markers="${st.markers.length}"></canvas>` +
    overlaySvg(st.layout, st.uid);
  paintMarkers(figure.querySelector("canvas.markers"), st.layout, st.markers);
}

// Paints a draw list (markerList) on the canvas, at the screen's pixel density, each plot's
// markers clipped to its box as the SVG clips its lines.
function paintMarkers(canvas, layout, list) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(layout.width * dpr);
  canvas.height = Math.round(layout.height * dpr);
  canvas.style.width = `${layout.width}px`;
  canvas.style.height = `${layout.height}px`;
  if (!list.length) return;
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  let plot = -1;
  for (const m of list) {
    if (m.plot !== plot) {
      if (plot >= 0) ctx.restore();
      plot = m.plot;
      const { box } = layout.plots[plot];
      ctx.save();
      ctx.beginPath();
      ctx.rect(box.left, box.top, box.width, box.height);
      ctx.clip();
    }
    ctx.globalAlpha = m.opacity;
    ctx.beginPath();
    if (m.circle !== undefined) {
      ctx.arc(m.cx, m.cy, m.circle, 0, 2 * Math.PI);
    } else {
      for (const pts of m.paths) {
        pts.forEach(([x, y], k) => (k ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
        if (m.closed) ctx.closePath();
      }
    }
    if (m.fill !== "none") {
      ctx.fillStyle = m.fill;
      ctx.fill();
    }
    ctx.strokeStyle = m.stroke;
    ctx.lineWidth = m.width;
    ctx.stroke();
  }
  ctx.restore();
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
  // The hovered point's ring (the overlay's), at `hit` or hidden.
  const ring = (hit) => {
    const el = figure.querySelector(".hover-ring");
    if (!el) return;
    if (hit) {
      el.setAttribute("cx", hit.x.toFixed(1));
      el.setAttribute("cy", hit.y.toFixed(1));
    }
    el.setAttribute("visibility", hit ? "visible" : "hidden");
  };
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
      return ring(i >= 0 ? st().layout.hits[i] : null);
    }
    tip.hidden = true;
    ring(null);
    const { box } = st().layout.plots[drag.plot];
    const x = Math.min(Math.max(p.x, box.left), box.left + box.width);
    const y = Math.min(Math.max(p.y, box.top), box.top + box.height);
    if (!drag.box) {
      drag.box = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      drag.box.setAttribute("class", "zoombox");
      figure.querySelector("svg.chart-overlay").appendChild(drag.box);
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
  figure.addEventListener("pointerleave", () => {
    if (drag) return;
    tip.hidden = true;
    ring(null);
  });
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
