// A 3D scatter plot on a 2D canvas, for the landscape panel: orthographic projection of the
// data's bounding box, points coloured on the Viridis scale (painted far to near), the box's
// back walls with grid lines, every axis with ticks, tick labels and title, a colour bar. Drag
// rotates, the wheel zooms, a double click restores the view; hovering a point shows its text,
// clicking it calls onSelect with its id. No WebGL: on a machine without a GPU chromium runs
// WebGL in software, which made Plotly's scatter3d the costliest panel (docs/dashboard.md,
// "Render time").
//
// The geometry (view, projection, ticks, colours, hit test) is pure and exported for node's
// tests (tests/browser/test_model.mjs); drawScatter3d is the only part that needs a DOM.

import { VIRIDIS, niceTicks, tickLabel, viridis } from "./axes.js";

// The tests read the shared scale functions from here too.
export { VIRIDIS, niceTicks, tickLabel, viridis };

const DEG = Math.PI / 180;
// Plotly's default camera for the panel (eye 1.7, 1.7, 1.1): 45 degrees round, 24.6 up.
export const DEFAULT_VIEW = { azimuth: 45 * DEG, elevation: Math.atan2(1.1, Math.hypot(1.7, 1.7)),
                              zoom: 1 };
const MAX_ELEVATION = 85 * DEG;

// The camera's unit vectors for a view: eye (from the centre towards the viewer), right and up
// on the screen. z is up in the data.
export function cameraBasis(view) {
  const ce = Math.cos(view.elevation), se = Math.sin(view.elevation);
  const ca = Math.cos(view.azimuth), sa = Math.sin(view.azimuth);
  const eye = [ce * ca, ce * sa, se];
  const right = [-sa, ca, 0];
  const up = [-se * ca, -se * sa, ce];  // eye x right
  return { eye, right, up };
}

const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];

// A point of the unit box [-1, 1]^3 on the screen: x right and y down in pixels from the
// centre (cx, cy) at `scale` pixels per unit; depth grows towards the viewer.
export function project(p, basis, scale, cx = 0, cy = 0) {
  return { x: cx + scale * dot(p, basis.right), y: cy - scale * dot(p, basis.up),
           depth: dot(p, basis.eye) };
}

// A view turned by a drag of (dx, dy) pixels: right turns the box right, down tilts it
// towards the viewer; the elevation stays within +-85 degrees.
export function rotate(view, dx, dy) {
  const elevation = Math.min(MAX_ELEVATION, Math.max(-MAX_ELEVATION, view.elevation + dy * 0.01));
  return { ...view, azimuth: view.azimuth - dx * 0.01, elevation };
}

// One axis of the plot from its values (numbers, or category indices with `categories`):
// {title, lo, hi, ticks: [{value, label}], unit(v) -> [-1, 1]}. The range is padded by 5% (half
// a category at least) so that no point sits on a wall.
export function axisScale(title, values, categories = null) {
  const xs = values.filter((v) => typeof v === "number" && Number.isFinite(v));
  let lo = categories ? 0 : Math.min(...xs), hi = categories ? categories.length - 1 : Math.max(...xs);
  if (!xs.length && !categories) { lo = 0; hi = 1; }
  const pad = categories ? Math.max(0.5, 0.05 * (hi - lo)) : hi > lo ? 0.05 * (hi - lo) : Math.abs(lo) / 2 || 1;
  lo -= pad; hi += pad;
  const ticks = categories
    ? categories.map((c, i) => ({ value: i, label: String(c) }))
    : niceTicks(lo, hi).map((v) => ({ value: v, label: tickLabel(v) }));
  return { title, lo, hi, ticks, unit: (v) => -1 + (2 * (v - lo)) / (hi - lo) };
}

// The box's 12 edges as pairs of corners, grouped by the axis they run along.
function edgesAlong(axis) {
  const out = [];
  for (const s of [-1, 1]) {
    for (const t of [-1, 1]) {
      const a = [0, 0, 0], b = [0, 0, 0];
      const others = [0, 1, 2].filter((k) => k !== axis);
      a[axis] = -1; b[axis] = 1;
      a[others[0]] = b[others[0]] = s;
      a[others[1]] = b[others[1]] = t;
      out.push([a, b]);
    }
  }
  return out;
}

// Where each axis's ticks go: the edge along it that is lowest on the screen (x and y), or the
// leftmost (z); ties go to the edge nearer the viewer. Returns [[a, b] corners] per axis.
export function labelEdges(basis) {
  return [0, 1, 2].map((axis) => {
    const score = ([a, b]) => {
      const mid = [0, 1, 2].map((k) => (a[k] + b[k]) / 2);
      const p = project(mid, basis, 1);
      return (axis === 2 ? -p.x : p.y) * 1000 + p.depth;
    };
    return edgesAlong(axis).reduce((best, e) => (score(e) > score(best) ? e : best));
  });
}

// The walls facing away from the viewer (drawn with grid lines behind the points):
// [{axis, side}] for the face at coordinate `side` (-1 or 1) of `axis`.
export function backWalls(basis) {
  const walls = [];
  for (let axis = 0; axis < 3; axis++) {
    walls.push({ axis, side: basis.eye[axis] > 0 ? -1 : 1 });
  }
  return walls;
}

// The index of the projected point nearest (x, y) within `radius` pixels, the nearest to the
// viewer on a tie; -1 when none. `points`: [{x, y, depth}].
export function nearestPoint(points, x, y, radius = 8) {
  let best = -1, bestD = radius * radius;
  for (let i = 0; i < points.length; i++) {
    const p = points[i];
    const d = (p.x - x) ** 2 + (p.y - y) ** 2;
    if (d < bestD || (d === bestD && best >= 0 && p.depth > points[best].depth)) { best = i; bestD = d; }
  }
  return best;
}

// The plot's data in unit coordinates: `spec` = {axes: [3 x {title, categories?}],
// points: [{coords: [x, y, z] (numbers or category indices, null when missing), colour, id,
// lines}]}. Points missing a coordinate are left out (as Plotly leaves them out).
export function layoutScatter(spec) {
  const axes = spec.axes.map((a, k) => axisScale(a.title, spec.points.map((p) => p.coords[k]),
                                                  a.categories || null));
  const shown = spec.points.filter((p) => p.coords.every((c) => typeof c === "number" && Number.isFinite(c)));
  const cs = shown.map((p) => p.colour).filter(Number.isFinite);
  const cmin = cs.length ? Math.min(...cs) : 0, cmax = cs.length ? Math.max(...cs) : 1;
  const points = shown.map((p) => ({ ...p, unit: p.coords.map((c, k) => axes[k].unit(c)),
                                     t: cmax > cmin ? (p.colour - cmin) / (cmax - cmin) : 0.5 }));
  return { axes, points, cmin, cmax };
}

const FONT = "11px system-ui, sans-serif";
const COLOURBAR_W = 64;

function drawWalls(ctx, model, basis, at) {
  ctx.lineWidth = 1;
  for (const { axis, side } of backWalls(basis)) {
    const [u, v] = [0, 1, 2].filter((k) => k !== axis);
    const corner = (a, b) => { const p = [0, 0, 0]; p[axis] = side; p[u] = a; p[v] = b; return at(p); };
    const quad = [corner(-1, -1), corner(1, -1), corner(1, 1), corner(-1, 1)];
    ctx.fillStyle = "#fbfbfc";
    ctx.beginPath();
    quad.forEach((q, i) => (i ? ctx.lineTo(q.x, q.y) : ctx.moveTo(q.x, q.y)));
    ctx.closePath();
    ctx.fill();
    ctx.strokeStyle = "#e4e7eb";
    for (const [k, other] of [[u, v], [v, u]]) {
      for (const tick of model.axes[k].ticks) {
        const c = model.axes[k].unit(tick.value);
        if (c < -1 || c > 1) continue;
        const a = [0, 0, 0], b = [0, 0, 0];
        a[axis] = b[axis] = side; a[k] = b[k] = c; a[other] = -1; b[other] = 1;
        const pa = at(a), pb = at(b);
        ctx.beginPath(); ctx.moveTo(pa.x, pa.y); ctx.lineTo(pb.x, pb.y); ctx.stroke();
      }
    }
  }
}

function drawAxes(ctx, model, basis, at, centre) {
  ctx.font = FONT;
  ctx.fillStyle = "#1f2328";
  ctx.strokeStyle = "#57606a";
  labelEdges(basis).forEach(([a, b], k) => {
    const pa = at(a), pb = at(b);
    ctx.beginPath(); ctx.moveTo(pa.x, pa.y); ctx.lineTo(pb.x, pb.y); ctx.stroke();
    const mid = at(a.map((v, i) => (v + b[i]) / 2));
    // Outwards: away from the box's centre on the screen.
    let ox = mid.x - centre.x, oy = mid.y - centre.y;
    const n = Math.hypot(ox, oy) || 1;
    ox /= n; oy /= n;
    ctx.textAlign = ox > 0.3 ? "left" : ox < -0.3 ? "right" : "center";
    ctx.textBaseline = oy > 0.3 ? "top" : oy < -0.3 ? "bottom" : "middle";
    const axis = model.axes[k];
    const step = Math.max(1, Math.ceil(axis.ticks.length / 8));  // at most 8 labels
    axis.ticks.forEach((tick, i) => {
      const c = axis.unit(tick.value);
      if (c < -1 || c > 1 || i % step) return;
      const p = a.slice(); p[k] = c;
      const q = at(p);
      ctx.fillText(tick.label.slice(0, 12), q.x + 6 * ox, q.y + 6 * oy);
    });
    ctx.font = `bold ${FONT}`;
    ctx.fillText(axis.title, mid.x + 34 * ox, mid.y + 34 * oy);
    ctx.font = FONT;
  });
}

function drawColourBar(ctx, model, x, top, height, title) {
  const grad = ctx.createLinearGradient(0, top + height, 0, top);
  for (const [pos, colour] of VIRIDIS) grad.addColorStop(pos, colour);
  ctx.fillStyle = grad;
  ctx.fillRect(x, top, 10, height);
  ctx.fillStyle = "#1f2328";
  ctx.font = FONT;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  const span = model.cmax - model.cmin;
  for (const v of span > 0 ? niceTicks(model.cmin, model.cmax, 4) : [model.cmin]) {
    const y = span > 0 ? top + height - ((v - model.cmin) / span) * height : top + height / 2;
    ctx.fillText(tickLabel(v), x + 14, y);
  }
  ctx.textBaseline = "bottom";
  ctx.fillText(title, x - 4, top - 4);
}

// The canvas' height in CSS pixels (its width is the panel's).
export const CANVAS_HEIGHT_PX = 340;

// Paints the whole plot for `view` at the canvas' size (`size`, [width, height] in CSS pixels,
// when known without asking the page for its layout); returns the points as drawn ({x, y,
// depth, point}).
function paint(canvas, model, view, colourTitle, size = null) {
  const dpr = Math.min(4, Math.max(1, globalThis.devicePixelRatio || 1));
  const [w, h] = size || [canvas.clientWidth, canvas.clientHeight];
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const plotW = Math.max(10, w - COLOURBAR_W);
  const centre = { x: plotW / 2, y: h / 2 };
  const scale = (view.zoom * Math.min(plotW, h)) / (2 * 2.0);  // room for labels round the box
  const basis = cameraBasis(view);
  const at = (p) => project(p, basis, scale, centre.x, centre.y);
  drawWalls(ctx, model, basis, at);
  const drawn = model.points.map((p) => ({ ...at(p.unit), point: p }));
  drawn.sort((a, b) => a.depth - b.depth);
  ctx.lineWidth = 0.5;
  ctx.strokeStyle = "rgba(31,35,40,0.6)";
  for (const d of drawn) {
    ctx.fillStyle = viridis(d.point.t);
    ctx.beginPath();
    ctx.arc(d.x, d.y, 4, 0, 2 * Math.PI);
    ctx.fill();
    ctx.stroke();
  }
  drawAxes(ctx, model, basis, at, centre);
  drawColourBar(ctx, model, plotW + 8, 28, Math.max(40, h - 60), colourTitle);
  return drawn;
}

// Draws (or redraws, keeping the view) the scatter of `spec` (layoutScatter's input, plus
// colourTitle, and width: the box's width when the caller knows it, which spares a layout of
// the page) into `box`, a positioned element: a canvas and a tooltip. Returns the canvas; its
// dataset.points is how many points are drawn.
export function drawScatter3d(box, spec, onSelect = () => {}) {
  let canvas = box.querySelector("canvas.scatter3d");
  if (!canvas) {
    box.textContent = "";
    canvas = document.createElement("canvas");
    canvas.className = "scatter3d";
    canvas.setAttribute("role", "img");
    canvas.style.height = `${CANVAS_HEIGHT_PX}px`;
    const tip = document.createElement("div");
    tip.className = "tooltip3d";
    tip.hidden = true;
    box.append(canvas, tip);
    bind(canvas, tip);
  }
  const st = canvas.okScatter || (canvas.okScatter = { view: { ...DEFAULT_VIEW }, drawn: [] });
  st.model = layoutScatter(spec);
  st.colourTitle = spec.colourTitle || "";
  st.onSelect = onSelect;
  st.redraw = (size = null) => {
    st.drawn = paint(canvas, st.model, st.view, st.colourTitle, size);
    st.size = size ? size.join("x") : `${canvas.clientWidth}x${canvas.clientHeight}`;
  };
  st.redraw(spec.width > 0 ? [spec.width, CANVAS_HEIGHT_PX] : null);
  canvas.dataset.points = String(st.drawn.length);
  canvas.setAttribute("aria-label", `3D scatter of ${st.drawn.length} attempts over ` +
                      st.model.axes.map((a) => a.title).join(", "));
  return canvas;
}

// Drag to rotate, wheel to zoom, double click to reset, hover for a point's text, click to
// select it.
function bind(canvas, tip) {
  const st = () => canvas.okScatter;
  let drag = null, frame = 0;
  const schedule = () => {
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; st().redraw(); });
  };
  const local = (ev) => {
    const r = canvas.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  };
  const hover = (ev) => {
    const { x, y } = local(ev);
    const i = nearestPoint(st().drawn, x, y);
    if (i < 0) { tip.hidden = true; canvas.style.cursor = "grab"; return -1; }
    const d = st().drawn[i];
    tip.replaceChildren(...d.point.lines.map((line) => {
      const div = document.createElement("div");
      div.textContent = line;
      return div;
    }));
    tip.hidden = false;
    tip.style.left = `${Math.min(d.x + 12, canvas.clientWidth - tip.offsetWidth - 4)}px`;
    tip.style.top = `${Math.max(0, d.y - tip.offsetHeight - 8)}px`;
    canvas.style.cursor = "pointer";
    return i;
  };
  canvas.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, moved: false };
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener("pointermove", (ev) => {
    if (!drag) return void hover(ev);
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 3) return;
    drag.moved = true;
    tip.hidden = true;
    st().view = rotate(st().view, dx, dy);
    drag.x = ev.clientX; drag.y = ev.clientY;
    schedule();
  });
  canvas.addEventListener("pointerup", (ev) => {
    const click = drag && !drag.moved;
    drag = null;
    if (!click) return;
    const i = hover(ev);
    if (i >= 0 && st().drawn[i].point.id !== undefined) st().onSelect(st().drawn[i].point.id);
  });
  // A drag the browser takes over (a touch turned into a scroll, a lost capture) ends without a
  // click.
  canvas.addEventListener("pointercancel", () => { drag = null; tip.hidden = true; });
  canvas.addEventListener("lostpointercapture", () => { drag = null; });
  canvas.addEventListener("pointerleave", () => { if (!drag) tip.hidden = true; });
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const zoom = Math.min(8, Math.max(0.25, st().view.zoom * Math.exp(-ev.deltaY * 0.001)));
    st().view = { ...st().view, zoom };
    schedule();
  }, { passive: false });
  canvas.addEventListener("dblclick", () => { st().view = { ...DEFAULT_VIEW }; schedule(); });
  // Redrawn when its size changes (not for the first notice, of the size it was drawn at).
  new ResizeObserver(() => {
    if (st().size !== `${canvas.clientWidth}x${canvas.clientHeight}`) schedule();
  }).observe(canvas);
}
