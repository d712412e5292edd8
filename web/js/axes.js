// Scales, ticks and the colour scale shared by the dashboard's 2D charts (chart.js) and the 3D
// landscape (scatter3d.js). Pure functions, tested by node (tests/browser/test_chart.mjs).
//
// A scale maps a data interval (its domain) onto a pixel interval (its range), linearly or on a
// log10 axis; its ticks are round numbers inside the domain: steps of 1, 2 or 5 times a power of
// ten, and on a log axis the powers of ten (with 2x and 5x between them when the axis spans
// at most two and a half decades, and round linear steps when it spans less than one).

// Plotly's Viridis colour scale: [position, colour].
export const VIRIDIS = [
  [0, "#440154"], [0.0627, "#48186a"], [0.1255, "#472d7b"], [0.1882, "#424086"],
  [0.2510, "#3b528b"], [0.3137, "#33638d"], [0.3765, "#2c728e"], [0.4392, "#26828e"],
  [0.5020, "#21918c"], [0.5647, "#1fa088"], [0.6275, "#28ae80"], [0.6902, "#3fbc73"],
  [0.7529, "#5ec962"], [0.8157, "#84d44b"], [0.8784, "#addc30"], [0.9412, "#d8e219"],
  [1, "#fde725"],
];

const rgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

// The colour of t in [0, 1] (clamped) on VIRIDIS, as "rgb(r,g,b)".
export function viridis(t) {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0));
  let k = 1;
  while (k < VIRIDIS.length - 1 && VIRIDIS[k][0] < x) k++;
  const [p0, c0] = VIRIDIS[k - 1], [p1, c1] = VIRIDIS[k];
  const f = p1 > p0 ? (x - p0) / (p1 - p0) : 0;
  const a = rgb(c0), b = rgb(c1);
  return `rgb(${a.map((v, i) => Math.round(v + f * (b[i] - v))).join(",")})`;
}

// The multiples of `step` within [lo, hi], or null when there would be more than `max`. Counted
// by a bounded index, not by adding to the value: near 1e17 a step below the numbers' spacing
// (or 1 added to an index above 2^53) changes nothing.
function multiples(lo, hi, step, max) {
  const first = Math.ceil(lo / step), n = Math.floor(hi / step + 1e-9) - first;
  if (!(n < max)) return null;
  const out = [];
  for (let i = 0; i <= n; i++) {
    const v = Number(((first + i) * step).toPrecision(12));
    if (out[out.length - 1] !== v) out.push(v);  // steps below the spacing give repeats
  }
  return out;
}

// About `count` (1 to 100) round tick values within [lo, hi] (steps of 1, 2 or 5 times a power
// of ten), three at least: a smaller step when the round one leaves fewer. At most 1000.
export function niceTicks(lo, hi, count = 5) {
  if (!(Number.isFinite(lo) && Number.isFinite(hi)) || hi < lo) return [];
  if (hi === lo) return [lo];
  if (!Number.isFinite(hi - lo)) return [lo, hi];
  const raw = (hi - lo) / Math.min(100, Math.max(1, count));
  const mag = 10 ** Math.floor(Math.log10(raw));
  const steps = [0.2, 0.5, 1, 2, 5, 10].map((m) => m * mag);
  let k = steps.findIndex((s) => s >= raw);
  let ticks = multiples(lo, hi, steps[k], 1000) || [];
  while (ticks.length < 3 && k > 0) ticks = multiples(lo, hi, steps[--k], 1000) || ticks;
  return ticks;
}

// Round values within [lo, hi] (both > 0) for a log axis of about `count` ticks.
export function logTicks(lo, hi, count = 6) {
  if (!(lo > 0 && Number.isFinite(hi) && hi >= lo)) return [];
  const a = Math.log10(lo), b = Math.log10(hi);
  if (b - a < 1) {
    const linear = niceTicks(lo, hi, 4).filter((v) => v > 0);
    if (linear.length >= 2) return linear;
  }
  const first = Math.ceil(a - 1e-9), last = Math.floor(b + 1e-9);
  const every = Math.max(1, Math.ceil((last - first + 1) / Math.max(1, count)));
  const out = [];
  // Decades between 1e-324 and 1e308: at most about 630 of them.
  for (let k = first; k <= last; k += every) out.push(Number((10 ** k).toPrecision(12)));
  if (b - a <= 2.5) {
    for (let k = first - 1; k <= last; k++) {
      for (const m of [2, 5]) {
        const v = Number((m * 10 ** k).toPrecision(12));
        if (v >= lo && v <= hi) out.push(v);
      }
    }
    out.sort((x, y) => x - y);
  }
  return out;
}

// A tick value as text: at most 4 significant digits, no trailing zeros; exponent form for the
// very large and very small ("2.5e+5", "1e+9").
export function tickLabel(v) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(1).replace(".0e", "e");
  return String(Number(v.toPrecision(4)));
}

// The data interval of `values` for an axis of `type` ("linear" or "log"), padded by `pad` of
// its span (on a log axis, of its span in decades): the values that cannot be drawn (not
// numbers; on a log axis, not above zero) left out. A single value gets room round it; no value
// gives [0, 1] (log: [1, 10]).
export function extent(values, type = "linear", pad = 0.05) {
  const log = type === "log";
  const xs = values.filter((v) => Number.isFinite(v) && (!log || v > 0)).map((v) => (log ? Math.log10(v) : v));
  if (!xs.length) return log ? [1, 10] : [0, 1];
  let lo = Math.min(...xs), hi = Math.max(...xs);
  const room = hi > lo ? pad * (hi - lo) : log ? 0.5 : Math.abs(lo) / 2 || 1;
  lo -= room; hi += room;
  return log ? [10 ** lo, 10 ** hi] : [lo, hi];
}

// A scale from `domain` [d0, d1] onto `range` [r0, r1] (pixels; r0 > r1 for a y axis): map,
// invert, and its ticks ({value, label}).
export function makeScale(type, domain, range) {
  const log = type === "log";
  const t = log ? (v) => (v > 0 ? Math.log10(v) : NaN) : (v) => v;
  const inv = log ? (u) => 10 ** u : (u) => u;
  const [t0, t1] = [t(domain[0]), t(domain[1])];
  const span = t1 - t0 || 1;
  return {
    type, domain, range,
    map: (v) => range[0] + ((t(v) - t0) / span) * (range[1] - range[0]),
    invert: (px) => inv(t0 + ((px - range[0]) / (range[1] - range[0] || 1)) * span),
    ticks: (count = 6) => (log ? logTicks(domain[0], domain[1], count) : niceTicks(domain[0], domain[1], count))
      .map((value) => ({ value, label: tickLabel(value) })),
  };
}
