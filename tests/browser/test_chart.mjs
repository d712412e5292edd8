// Unit tests of the dashboard's SVG charts' pure parts (web/js/axes.js, web/js/chart.js): scales,
// ticks (bounded near the limits of doubles), extents, the figure's layout, lines, markers, hit
// test, zoom and legend. Run by node's own test runner:
//   node --test tests/browser/test_chart.mjs
import assert from "node:assert/strict";
import { test } from "node:test";

import { extent, logTicks, makeScale, niceTicks, tickLabel, viridis } from "../../web/js/axes.js";
import {
  MARGIN, figureSvg, layoutFigure, legendEntries, linePath, markerSvg, nearestHit, plotAt, zoomOf,
} from "../../web/js/chart.js";

const near = (a, b, eps = 1e-9) => Math.abs(a - b) <= eps * Math.max(1, Math.abs(b));

test("niceTicks: round steps, and bounded where adding a step changes nothing", () => {
  assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(niceTicks(-1, 1, 4), [-1, -0.5, 0, 0.5, 1]);
  // Near 1e17 a double's spacing is 16: a step of 2 added to 1e17 gives 1e17 again. The old loop
  // never ended there; now each call returns at once, with distinct values.
  for (const [lo, hi] of [[1e17, 1e17 + 64], [1e17, 1e17 + 16], [5e16, 5e16 + 32], [1e300, 1.0000001e300],
                          [-1.7e308, 1.7e308], [9007199254740992, 9007199254740996]]) {
    const t = niceTicks(lo, hi);
    assert.ok(t.length >= 1 && t.length <= 1000, `${lo}..${hi}: ${t.length} ticks`);
    assert.equal(new Set(t).size, t.length, "no repeats");
  }
  assert.deepEqual(niceTicks(0, 1, 1e9).length <= 1000, true, "a huge count is capped");
  assert.deepEqual(niceTicks(NaN, 1), []);
  assert.deepEqual(niceTicks(0, Infinity), []);
});

test("logTicks: decades, 2 and 5 between them on short axes, linear steps within a decade", () => {
  assert.deepEqual(logTicks(1, 100), [1, 2, 5, 10, 20, 50, 100]);
  assert.deepEqual(logTicks(1, 1000), [1, 10, 100, 1000]);
  assert.deepEqual(logTicks(2e8, 5e11), [1e9, 1e10, 1e11], "3.4 decades: the decades alone");
  assert.deepEqual(logTicks(1e6, 1e12), [1e6, 1e8, 1e10, 1e12]);
  assert.deepEqual(logTicks(2, 7), [2, 4, 6]);
  assert.deepEqual(logTicks(0.5, 30), [0.5, 1, 2, 5, 10, 20]);
  assert.deepEqual(logTicks(0, 10), [], "a log axis starts above zero");
  assert.ok(logTicks(1e-300, 1e300).length <= 7);
  assert.deepEqual([tickLabel(1e9), tickLabel(2.5e-5), tickLabel(0.001)], ["1e+9", "2.5e-5", "0.001"]);
});

test("extent pads the data, leaves out what an axis cannot show, and copes with one value", () => {
  assert.deepEqual(extent([0, 10]), [-0.5, 10.5]);
  const [lo, hi] = extent([1, 100], "log");
  assert.ok(near(Math.log10(lo), -0.1) && near(Math.log10(hi), 2.1));
  assert.deepEqual(extent([0, -3, null, NaN, 10, 10], "log").map((v) => Number(v.toPrecision(6))),
                   [3.16228, 31.6228], "one value above zero: half a decade each side");
  assert.deepEqual(extent([4, 4]), [2, 6]);
  assert.deepEqual(extent([]), [0, 1]);
  assert.deepEqual(extent([], "log"), [1, 10]);
});

test("makeScale maps and inverts, linear and log, with ticks inside the domain", () => {
  const lin = makeScale("linear", [0, 10], [100, 200]);
  assert.equal(lin.map(5), 150);
  assert.equal(lin.invert(175), 7.5);
  const log = makeScale("log", [1, 1000], [300, 0]);
  assert.ok(near(log.map(10), 200) && near(log.invert(100), 100));
  assert.ok(Number.isNaN(log.map(0)), "zero has no place on a log axis");
  assert.deepEqual(log.ticks(4).map((t) => t.label), ["1", "10", "100", "1000"]);
  assert.ok(makeScale("linear", [3, 3], [0, 10]).map(3) === 0, "a zero-width domain does not divide by 0");
});

const spec = () => ({
  height: 300, colour: { title: "speedup" },
  plots: [{
    x: { title: "attempt" }, y: { title: "speedup", type: "log" },
    series: [
      { name: "best", mode: "lines", shape: "hv", hover: false,
        points: [{ x: 1, y: 1 }, { x: 2, y: 2 }, { x: 3, y: 0 }, { x: 4, y: 4 }] },
      { name: "attempts", mode: "markers",
        points: [{ x: 1, y: 1, id: 1, value: 0, text: "#1" }, { x: 4, y: 4, id: 4, value: 2, text: "#4\nbest" },
                 { x: 2, y: -1, id: 2, value: 1 }] },
    ],
  }, {
    x: { title: "seconds", range: [0, 100] }, y: { title: "y", zero: true },
    series: [{ name: "attempts", mode: "lines+markers", points: [{ x: 50, y: 5, id: 9 }] }],
  }],
});

test("layoutFigure: boxes side by side, domains from the visible data, hits of drawable points", () => {
  const l = layoutFigure(spec(), 800);
  assert.equal(l.plots.length, 2);
  const [a, b] = l.plots;
  assert.equal(a.box.left, MARGIN.left);
  assert.ok(b.box.left > a.box.left + a.box.width, "the second plot right of the first");
  assert.ok(b.box.left + b.box.width <= 800 - MARGIN.colourBar, "room for the colour bar");
  assert.ok(a.x.domain[0] < 1 && a.x.domain[1] > 4);
  assert.ok(a.y.domain[0] > 0 && a.y.domain[0] < 1, "log axis: above zero, below the least value");
  assert.deepEqual(b.x.domain, [0, 100], "a fixed range");
  assert.ok(b.y.domain[0] <= 0, "zero: the range includes 0");
  // Hits: the markers only (the line has hover: false; y = -1 cannot be drawn on a log axis).
  assert.deepEqual(l.hits.map((h) => h.point.id), [1, 4, 9]);
  assert.deepEqual(l.colour, { title: "speedup", min: 0, max: 2 });
  assert.equal(nearestHit(l.hits, l.hits[1].x + 5, l.hits[1].y - 5), 1);
  assert.equal(nearestHit(l.hits, l.hits[1].x + 40, l.hits[1].y), -1, "too far from every point");
  assert.equal(plotAt(l, a.box.left + 1, a.box.top + 1), 0);
  assert.equal(plotAt(l, b.box.left + 1, b.box.top + 1), 1);
  assert.equal(plotAt(l, 1, 1), -1);
});

test("a hidden legend entry is neither drawn nor counted in the domain", () => {
  const all = layoutFigure(spec(), 800);
  const hid = layoutFigure(spec(), 800, { hidden: new Set(["best"]), zoom: [] });
  assert.equal(hid.plots[0].series.length, 1);
  assert.ok(!figureSvg(hid, "t").includes('data-group="best"'));
  assert.ok(figureSvg(all, "t").includes('data-group="best"'));
  assert.deepEqual(legendEntries(spec()).map((e) => [e.group, e.symbol]), [["best", null], ["attempts", "circle"]]);
});

test("zoom: a box over both axes, a flat drag over x only, a tiny one is a click", () => {
  const l = layoutFigure(spec(), 800);
  const p = l.plots[0];
  const z = zoomOf(p, p.x.map(2), p.y.map(3), p.x.map(3), p.y.map(1.5));
  assert.ok(near(z.x[0], 2) && near(z.x[1], 3) && near(z.y[0], 1.5) && near(z.y[1], 3));
  const flat = zoomOf(p, p.x.map(2), 100, p.x.map(3), 102);
  assert.deepEqual(flat.y, p.y.domain);
  assert.equal(zoomOf(p, 100, 100, 102, 103), null);
  const zoomed = layoutFigure(spec(), 800, { hidden: new Set(), zoom: [z] });
  assert.deepEqual(zoomed.plots[0].x.domain, z.x);
  assert.deepEqual(zoomed.hits.map((h) => h.point.id), [9], "points outside the zoom are not hit");
});

test("linePath: steps, straight lines, and a break at a point the axis cannot show", () => {
  const x = makeScale("linear", [0, 10], [0, 100]), y = makeScale("log", [1, 100], [100, 0]);
  assert.equal(linePath([{ x: 0, y: 1 }, { x: 5, y: 10 }], x, y, "hv"), "M0.0,100.0H50.0V50.0");
  assert.equal(linePath([{ x: 0, y: 1 }, { x: 5, y: 10 }], x, y), "M0.0,100.0L50.0,50.0");
  assert.equal(linePath([{ x: 0, y: 1 }, { x: 2, y: 0 }, { x: 5, y: 10 }], x, y), "M0.0,100.0M50.0,50.0");
});

test("figureSvg draws axes, titles, markers, the colour bar; markerSvg every symbol", () => {
  const svg = figureSvg(layoutFigure(spec(), 800), "u1", "a <label>");
  assert.match(svg, /^<svg class="chart" width="800" height="300"/);
  assert.ok(svg.includes('aria-label="a &lt;label&gt;"'));
  assert.equal((svg.match(/class="pt"/g) || []).length, 3, "three drawable markers");
  assert.ok(svg.includes(">attempt</text>") && svg.includes(">speedup</text>"));
  assert.ok(svg.includes('clip-path="url(#u1-clip0)"') && svg.includes('id="u1-grad"'));
  assert.ok(svg.includes(`fill="${viridis(1)}"`), "the best point coloured at the top of the scale");
  // An integer axis (attempt numbers) labels whole numbers only, where the scale offers halves.
  const xLabels = (figure) => {
    const svgText = figureSvg(layoutFigure(figure, 2400), "w");
    const plot0 = svgText.slice(svgText.indexOf('data-plot="0"'), svgText.indexOf('data-plot="1"'));
    return [...plot0.matchAll(/class="tick"[^>]*text-anchor="middle">([^<]*)</g)].map((m) => Number(m[1]));
  };
  assert.ok(xLabels(spec()).some((v) => !Number.isInteger(v)), `fractions: ${xLabels(spec())}`);
  const ints = spec();
  ints.plots[0].x.integer = true;
  assert.deepEqual(xLabels(ints), [1, 2, 3, 4]);
  for (const sym of ["circle", "x", "star", "diamond", "ring"]) {
    assert.match(markerSvg(sym, 10, 10, 8, "#123456"), /class="pt"/, sym);
  }
  assert.ok(markerSvg("x", 10, 10, 8, "#f00").includes('stroke="#f00"'));
});
