// A gauge as SVG text, for the utilisation panel: a half-circle dial from 0 to 100 % with two
// shaded bands (50-80 %, 80-100 %), the value's bar, ticks every 20 %, the value as a number
// and a title. It replaces Plotly's `indicator` trace, which only Plotly's full bundle has
// (docs/dashboard.md, "Render time"). Pure: gaugeSvg returns a string (node's tests read it).
import { escapeHtml } from "./model.js";

const R = 84, WIDTH = 30;  // the dial's outer radius and thickness, in SVG units
const CX = 100, CY = 128;   // the dial's centre in a 200 x 150 view box

// The point at `percent` (0 at the left end, 100 at the right end) on a circle of radius r.
export function dialPoint(percent, r) {
  const a = Math.PI * (1 - Math.min(100, Math.max(0, percent)) / 100);
  return [CX + r * Math.cos(a), CY - r * Math.sin(a)];
}

// The SVG path of the band from percent `from` to `to` of the dial.
export function bandPath(from, to, outer = R, inner = R - WIDTH) {
  const f = (n) => n.toFixed(2);
  const [x0, y0] = dialPoint(from, outer), [x1, y1] = dialPoint(to, outer);
  const [x2, y2] = dialPoint(to, inner), [x3, y3] = dialPoint(from, inner);
  return `M${f(x0)},${f(y0)} A${outer},${outer} 0 0 1 ${f(x1)},${f(y1)} ` +
    `L${f(x2)},${f(y2)} A${inner},${inner} 0 0 0 ${f(x3)},${f(y3)} Z`;
}

// The gauge of `fraction` (0..1; null or not a number reads 0) as an <svg> element's text.
export function gaugeSvg(fraction, title) {
  const percent = Math.round(1000 * (Number.isFinite(fraction) ? fraction : 0)) / 10;
  const ticks = [0, 20, 40, 60, 80, 100].map((t) => {
    const [x0, y0] = dialPoint(t, R), [x1, y1] = dialPoint(t, R + 4), [lx, ly] = dialPoint(t, R + 12);
    return `<line x1="${x0.toFixed(2)}" y1="${y0.toFixed(2)}" x2="${x1.toFixed(2)}" y2="${y1.toFixed(2)}" ` +
      `stroke="#57606a"/><text x="${lx.toFixed(2)}" y="${ly.toFixed(2)}" class="tick">${t}</text>`;
  }).join("");
  const bar = percent > 0 ? `<path class="bar" d="${bandPath(0, percent, R - 7, R - WIDTH + 7)}" fill="#0969da"/>` : "";
  return `<svg class="gauge" viewBox="0 0 200 150" role="img" ` +
    `aria-label="${escapeHtml(title)}: ${percent}%">` +
    `<text x="${CX}" y="14" class="title">${escapeHtml(title)}</text>` +
    `<path d="${bandPath(0, 50)}" fill="#f6f8fa" stroke="#d0d7de" stroke-width="0.5"/>` +
    `<path d="${bandPath(50, 80)}" fill="#eaeef2" stroke="#d0d7de" stroke-width="0.5"/>` +
    `<path d="${bandPath(80, 100)}" fill="#ffffff" stroke="#d0d7de" stroke-width="0.5"/>` +
    `${bar}${ticks}<text x="${CX}" y="${CY - 6}" class="number">${percent}%</text></svg>`;
}
