// The dashboard's 2D charts as SVG: a figure of one or more plots side by side, each with two
// axes (linear or log10, round ticks, grid lines, titles) and series drawn as lines (straight or
// steps) and markers (circle, x, star, diamond, ring), coloured by series or, point by point, on
// the Viridis scale with a colour bar. Pure: layoutFigure and figureSvg turn a spec and a width
// into positions and SVG text (node's tests read them); chart_view.js puts them on the page and
// adds the legend, hover, box zoom and clicks.
//
// Spec: {height, key (a new key drops the zoom: the axes mean something else), legend (true:
// listed even with one entry; false: never), plots: [{x: AXIS, y: AXIS, series: [SERIES]}], colour: {title} (a colour bar
// right of the last plot, for points with a `value`)}.
// AXIS: {title, type: "linear" | "log", range: [lo, hi] (fixed), zero: true (the range includes 0),
// integer: true (ticks on whole numbers only: attempt numbers)}.
// SERIES: {name, group (the legend entry; default the name), legend (false: not listed), mode:
// "lines" | "markers" | "lines+markers", shape: "linear" | "hv", colour, width, dash, opacity,
// symbol, size, hover (false: no tooltip), points: [{x, y, id, text, value, size, symbol}]}.
// A point's `id` is what a click on it reports; `text` its tooltip (lines joined by "\n").
// View state: {hidden: Set of groups, zoom: [per plot {x: [lo, hi], y: [lo, hi]} or null]}.
import { VIRIDIS, extent, makeScale, tickLabel, viridis } from "./axes.js";
import { escapeHtml as escapeAttr } from "./model.js";

export const MARGIN = { left: 58, right: 14, top: 10, bottom: 40, gap: 24, colourBar: 62 };

const drawable = (scale, v) => Number.isFinite(v) && (scale.type !== "log" || v > 0);

// The domain of one axis of plot `p`: its zoom, its fixed range, else the visible points'
// extent (with 0 when `zero`).
function domainOf(axisSpec, values, zoomed) {
  if (zoomed) return zoomed;
  if (Array.isArray(axisSpec.range)) return axisSpec.range;
  const type = axisSpec.type || "linear";
  return extent(axisSpec.zero && type !== "log" ? [...values, 0] : values, type);
}

// Positions of everything drawn: per plot its box (pixels), scales and visible series; `hits`:
// every drawn point that has a tooltip or an id, with its pixel position; the colour range.
export function layoutFigure(spec, width, view = { hidden: new Set(), zoom: [] }) {
  const height = spec.height || 300;
  const plots = spec.plots || [];
  const withBar = Boolean(spec.colour);
  const values = plots.flatMap((p) => p.series.flatMap((s) => s.points.map((q) => q.value)))
    .filter(Number.isFinite);
  const colour = withBar && values.length
    ? { title: spec.colour.title || "", min: Math.min(...values), max: Math.max(...values) } : null;
  const inner = width - (withBar ? MARGIN.colourBar : 0);
  const each = Math.max(40, (inner - (plots.length - 1) * MARGIN.gap) / Math.max(1, plots.length));
  const hits = [];
  const laid = plots.map((p, i) => {
    const left = i * (each + MARGIN.gap) + MARGIN.left;
    const box = { left, top: MARGIN.top, width: Math.max(10, each - MARGIN.left - MARGIN.right),
                  height: Math.max(10, height - MARGIN.top - MARGIN.bottom) };
    const series = p.series.filter((s) => !view.hidden.has(s.group ?? s.name));
    const pts = series.flatMap((s) => s.points);
    const zoom = (view.zoom || [])[i];
    const x = makeScale(p.x.type || "linear", domainOf(p.x, pts.map((q) => q.x), zoom && zoom.x),
                        [box.left, box.left + box.width]);
    const y = makeScale(p.y.type || "linear", domainOf(p.y, pts.map((q) => q.y), zoom && zoom.y),
                        [box.top + box.height, box.top]);
    for (const s of series) {
      if (s.hover === false || !s.mode || !s.mode.includes("markers")) continue;
      for (const q of s.points) {
        if (!inside(x, q.x) || !inside(y, q.y)) continue;
        hits.push({ plot: i, x: x.map(q.x), y: y.map(q.y), series: s, point: q });
      }
    }
    return { spec: p, box, x, y, series };
  });
  return { width, height, plots: laid, hits, colour };
}

function inside(scale, v) {
  if (!drawable(scale, v)) return false;
  const [lo, hi] = [Math.min(...scale.domain), Math.max(...scale.domain)];
  return v >= lo && v <= hi;
}

// The index in `hits` of the point nearest (px, py) within `radius` pixels, or -1.
export function nearestHit(hits, px, py, radius = 12) {
  let best = -1, bestD = radius * radius;
  hits.forEach((h, i) => {
    const d = (h.x - px) ** 2 + (h.y - py) ** 2;
    if (d <= bestD) { best = i; bestD = d; }
  });
  return best;
}

// The plot whose box holds (px, py), or -1.
export function plotAt(layout, px, py) {
  return layout.plots.findIndex(({ box }) => px >= box.left && px <= box.left + box.width &&
                                             py >= box.top && py <= box.top + box.height);
}

// The zoom of a drag from (x0, y0) to (x1, y1) over plot `p` of a layout: both axes when the
// drag spans more than `min` pixels each way, else only the axis it spans (null: neither).
export function zoomOf(plot, x0, y0, x1, y1, min = 5) {
  const wide = Math.abs(x1 - x0) > min, tall = Math.abs(y1 - y0) > min;
  if (!wide && !tall) return null;
  const range = (scale, a, b) => [scale.invert(a), scale.invert(b)].sort((u, v) => u - v);
  return { x: wide ? range(plot.x, x0, x1) : [...plot.x.domain],
           y: tall ? range(plot.y, y0, y1) : [...plot.y.domain] };
}

// The SVG path of a series' line through its drawable points; a point that cannot be drawn
// breaks the line. "hv": a step, horizontal then vertical.
export function linePath(points, x, y, shape = "linear") {
  const f = (v) => v.toFixed(1);
  let d = "", open = false;
  for (const q of points) {
    if (!drawable(x, q.x) || !drawable(y, q.y)) { open = false; continue; }
    const [sx, sy] = [x.map(q.x), y.map(q.y)];
    if (!open) d += `M${f(sx)},${f(sy)}`;
    else if (shape === "hv") d += `H${f(sx)}V${f(sy)}`;
    else d += `L${f(sx)},${f(sy)}`;
    open = true;
  }
  return d;
}

// A marker's SVG element at (cx, cy).
export function markerSvg(symbol, cx, cy, size, fill, stroke = "rgba(31,35,40,0.55)") {
  const r = size / 2, f = (v) => v.toFixed(1);
  if (symbol === "x") {
    return `<path class="pt" d="M${f(cx - r)},${f(cy - r)}L${f(cx + r)},${f(cy + r)}M${f(cx - r)},` +
      `${f(cy + r)}L${f(cx + r)},${f(cy - r)}" stroke="${fill}" stroke-width="2" fill="none"/>`;
  }
  if (symbol === "star" || symbol === "diamond") {
    const n = symbol === "star" ? 10 : 4;
    const pts = Array.from({ length: n }, (_, k) => {
      const a = -Math.PI / 2 + (k * 2 * Math.PI) / n, rr = symbol === "star" && k % 2 ? r * 0.45 : r * 1.2;
      return `${f(cx + rr * Math.cos(a))},${f(cy + rr * Math.sin(a))}`;
    });
    return `<path class="pt" d="M${pts.join("L")}Z" fill="${fill}" stroke="${stroke}" stroke-width="0.7"/>`;
  }
  if (symbol === "ring") {
    return `<circle class="pt" cx="${f(cx)}" cy="${f(cy)}" r="${f(r)}" fill="none" stroke="${fill}" stroke-width="2"/>`;
  }
  return `<circle class="pt" cx="${f(cx)}" cy="${f(cy)}" r="${f(r)}" fill="${fill}" stroke="${stroke}" stroke-width="0.5"/>`;
}

function colourOf(layout, series, q) {
  if (layout.colour && Number.isFinite(q.value)) {
    const { min, max } = layout.colour;
    return viridis(max > min ? (q.value - min) / (max - min) : 0.5);
  }
  return series.colour || "#0969da";
}

function seriesSvg(layout, plot, s) {
  const { x, y } = plot;
  const mode = s.mode || "markers";
  let out = `<g class="series" data-group="${escapeAttr(s.group ?? s.name)}"` +
    `${s.opacity !== undefined ? ` opacity="${s.opacity}"` : ""}>`;
  if (mode.includes("lines")) {
    out += `<path class="line" d="${linePath(s.points, x, y, s.shape)}" fill="none" ` +
      `stroke="${s.colour || "#0969da"}" stroke-width="${s.width || 1.5}"` +
      `${s.dash ? ` stroke-dasharray="${s.dash === "dot" ? "2,3" : "6,4"}"` : ""}/>`;
  }
  if (mode.includes("markers")) {
    out += '<g class="points">';
    for (const q of s.points) {
      if (!inside(x, q.x) || !inside(y, q.y)) continue;
      out += markerSvg(q.symbol || s.symbol || "circle", x.map(q.x), y.map(q.y), q.size || s.size || 8,
                       colourOf(layout, s, q));
    }
    out += "</g>";
  }
  return `${out}</g>`;
}

function axesSvg(plot) {
  const { box, x, y, spec } = plot;
  const f = (v) => v.toFixed(1);
  const bottom = box.top + box.height, right = box.left + box.width;
  let grid = "", labels = "";
  const whole = (axis, ticks) => ticks.filter((t) => !axis.integer || Number.isInteger(t.value));
  for (const t of whole(spec.x, x.ticks(Math.max(2, Math.round(box.width / 90))))) {
    const px = x.map(t.value);
    grid += `M${f(px)},${box.top}V${bottom}`;
    labels += `<text class="tick" x="${f(px)}" y="${bottom + 14}" text-anchor="middle">${t.label}</text>`;
  }
  for (const t of whole(spec.y, y.ticks(Math.max(2, Math.round(box.height / 50))))) {
    const py = y.map(t.value);
    grid += `M${box.left},${f(py)}H${right}`;
    labels += `<text class="tick" x="${box.left - 6}" y="${f(py + 3.5)}" text-anchor="end">${t.label}</text>`;
  }
  const xt = escapeAttr(spec.x.title || ""), yt = escapeAttr(spec.y.title || "");
  const ymid = box.top + box.height / 2;
  return `<rect class="bg" x="${box.left}" y="${box.top}" width="${f(box.width)}" height="${f(box.height)}"/>` +
    `<path class="grid" d="${grid}"/>${labels}` +
    `<text class="title" x="${f(box.left + box.width / 2)}" y="${bottom + 32}" text-anchor="middle">${xt}</text>` +
    `<text class="title" transform="translate(${box.left - 44},${f(ymid)}) rotate(-90)" text-anchor="middle">${yt}</text>`;
}

function colourBarSvg(layout, uid) {
  const c = layout.colour;
  if (!c) return "";
  const x = layout.width - MARGIN.colourBar + 14, top = MARGIN.top + 16;
  const h = Math.max(30, layout.height - MARGIN.top - MARGIN.bottom - 16);
  const stops = VIRIDIS.map(([p, col]) => `<stop offset="${p}" stop-color="${col}"/>`).join("");
  const span = c.max - c.min;
  const ticks = span > 0 ? makeScale("linear", [c.min, c.max], [top + h, top]).ticks(4)
    : [{ value: c.min, label: tickLabel(c.min) }];
  return `<g class="colourbar"><linearGradient id="${uid}-grad" x1="0" y1="1" x2="0" y2="0">${stops}` +
    `</linearGradient><rect x="${x}" y="${top}" width="10" height="${h}" fill="url(#${uid}-grad)"/>` +
    ticks.map((t) => `<text class="tick" x="${x + 14}" y="${(span > 0 ? top + h - ((t.value - c.min) / span) * h : top + h / 2) + 3.5}">${t.label}</text>`).join("") +
    `<text class="title" x="${x - 4}" y="${top - 5}">${escapeAttr(c.title)}</text></g>`;
}

// The figure as an <svg> element's text; `uid` makes its clip-path and gradient ids unique on
// the page.
export function figureSvg(layout, uid, label = "") {
  let out = `<svg class="chart" width="${layout.width}" height="${layout.height}" ` +
    `viewBox="0 0 ${layout.width} ${layout.height}" role="img" aria-label="${escapeAttr(label)}">`;
  layout.plots.forEach((plot, i) => {
    const { box } = plot;
    out += `<g class="plot-area" data-plot="${i}"><clipPath id="${uid}-clip${i}"><rect x="${box.left}" ` +
      `y="${box.top}" width="${box.width.toFixed(1)}" height="${box.height.toFixed(1)}"/></clipPath>` +
      `${axesSvg(plot)}<g clip-path="url(#${uid}-clip${i})">` +
      `${plot.series.map((s) => seriesSvg(layout, plot, s)).join("")}</g></g>`;
  });
  return `${out}${colourBarSvg(layout, uid)}</svg>`;
}

// The legend's entries: one per group, in the order of first appearance, with the first
// series' look.
export function legendEntries(spec) {
  const seen = new Map();
  for (const p of spec.plots || []) {
    for (const s of p.series) {
      const group = s.group ?? s.name;
      if (s.legend === false || seen.has(group)) continue;
      seen.set(group, { group, name: s.name, colour: s.colour || "#0969da",
                        symbol: (s.mode || "markers").includes("markers") ? s.symbol || "circle" : null,
                        dash: s.dash || null });
    }
  }
  return [...seen.values()];
}
