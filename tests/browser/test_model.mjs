// Unit tests of the dashboard's pure functions (web/js/model.js, chart_spec.js, gauge.js and
// scatter3d.js's geometry), run by node's own test runner:
//   node --test tests/browser/test_model.mjs
import assert from "node:assert/strict";
import { test } from "node:test";

import { chartSpec } from "../../web/js/chart_spec.js";
import { bandPath, dialPoint, gaugeSvg } from "../../web/js/gauge.js";
import {
  bestSoFar, codeSegments, escapeHtml, filterRows, intentForest, landscapeAxes, lineDiff,
  paretoFrontier, roofLines, secondsBetween, sortRows, splitHighlightedLines, statusCounts,
  strategyRows, visibleRows,
} from "../../web/js/model.js";
import {
  DEFAULT_VIEW, axisScale, backWalls, cameraBasis, labelEdges, layoutScatter, nearestPoint,
  niceTicks, project, rotate, tickLabel, viridis,
} from "../../web/js/scatter3d.js";

test("bestSoFar keeps the best correct speedup and ignores incorrect ones", () => {
  const got = bestSoFar([
    { number: 1, correct: false, speedup: 9 },
    { number: 2, correct: true, speedup: 1.5 },
    { number: 3, correct: true, speedup: 1.2 },
    { number: 4, correct: true, speedup: 2.5 },
  ]);
  assert.deepEqual(got.map((p) => p.best), [null, 1.5, 1.5, 2.5]);
});

test("secondsBetween reads ISO times and refuses garbage", () => {
  assert.equal(secondsBetween("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:02.500Z"), 2.5);
  assert.equal(secondsBetween("nope", "2026-01-01T00:00:00Z"), null);
});

test("sortRows sorts numbers and text, nulls last both ways, stable", () => {
  const rows = [{ n: 1, s: null }, { n: 2, s: 3 }, { n: 3, s: 1 }, { n: 4, s: 3 }];
  assert.deepEqual(sortRows(rows, "s").map((r) => r.n), [3, 2, 4, 1]);
  assert.deepEqual(sortRows(rows, "s", true).map((r) => r.n), [2, 4, 3, 1]);
  assert.deepEqual(sortRows([{ v: "b" }, { v: "a" }], "v").map((r) => r.v), ["a", "b"]);
});

test("filterRows matches every word, and key:value against that field", () => {
  const rows = [{ verdict: "correct", what: "tile 64" }, { verdict: "incorrect", what: "tile 128" }];
  const text = (r) => `${r.verdict} ${r.what}`;
  assert.equal(filterRows(rows, "tile", text).length, 2);
  assert.deepEqual(filterRows(rows, "TILE 128", text), [rows[1]]);
  assert.deepEqual(filterRows(rows, "verdict:correct", text), [rows[0]]);
  assert.equal(filterRows(rows, "  ", text).length, 2);
  assert.equal(filterRows(rows, "nothing:here", text).length, 0);
});

test("visibleRows draws the rows in view and a margin, never past either end", () => {
  assert.deepEqual(visibleRows(500, 0, 24, 420, 20), [0, 38]);
  assert.deepEqual(visibleRows(500, 6000, 24, 420, 20), [230, 288]);
  assert.deepEqual(visibleRows(500, 1e6, 24, 420, 20), [500, 500]);
  assert.deepEqual(visibleRows(3, 0, 24, 420, 20), [0, 3]);
  assert.deepEqual(visibleRows(0, 0, 24, 420, 20), [0, 0]);
});

test("lineDiff finds the changed lines with both sides' numbers", () => {
  const ops = lineDiff("a\nb\nc\nd\n", "a\nB\nc\nd\ne\n");
  assert.deepEqual(ops.map((o) => `${o.op}:${o.a ?? "-"}:${o.b ?? "-"}:${o.text}`), [
    "same:1:1:a", "del:2:-:b", "add:-:2:B", "same:3:3:c", "same:4:4:d", "add:-:5:e",
  ]);
  assert.deepEqual(lineDiff("", "x").map((o) => o.op), ["add"]);
  assert.ok(lineDiff("same\n", "same\n").every((o) => o.op === "same"));
});

test("codeSegments finds the C++ of a load_inline string inside Python", () => {
  const src = [
    "import torch",
    'cpp = r"""',
    "#include <torch/extension.h>",
    "torch::Tensor f(torch::Tensor x) { return x; }",
    '"""',
    "class ModelNew: pass",
  ].join("\n");
  const segs = codeSegments(src, "python");
  assert.deepEqual(segs.map((s) => [s.lang, s.first, s.lines.length]),
                   [["python", 0, 2], ["cpp", 2, 2], ["python", 4, 2]]);
  // A docstring is not code.
  assert.deepEqual(codeSegments('"""\nA docstring.\n"""\nx = 1', "python").map((s) => s.lang),
                   ["python"]);
  assert.deepEqual(codeSegments("int main() {}", "cuda").map((s) => s.lang), ["cpp"]);
});

test("splitHighlightedLines balances spans across lines", () => {
  const html = '<span class="a">x\ny</span> z\n<span class="b">w</span>';
  assert.deepEqual(splitHighlightedLines(html), [
    '<span class="a">x</span>', '<span class="a">y</span> z', '<span class="b">w</span>',
  ]);
});

test("paretoFrontier keeps the points nothing cheaper beats", () => {
  const front = paretoFrontier([{ x: 1, y: 2 }, { x: 2, y: 1 }, { x: 3, y: 5 }, { x: 1, y: 1 },
                                { x: NaN, y: 9 }]);
  assert.deepEqual(front.map((p) => [p.x, p.y]), [[1, 2], [3, 5]]);
});

test("roofLines puts the ridge at peak over bandwidth", () => {
  const r = roofLines(1e12, 1e14, 0.5, 2);
  assert.equal(r.ridge, 100);
  assert.deepEqual(r.y, [1e12 * r.x[0], 1e14, 1e14]);
  assert.equal(roofLines(0, 1, 1, 1), null);
});

test("landscapeAxes uses the varying template axes, else attempt, runtime, bandwidth", () => {
  const attempts = [
    { number: 1, speedup: 2, params: { s: { a: 1, b: "x", c: true } } },
    { number: 2, speedup: 3, params: { s: { a: 2, b: "x", c: false } } },
  ];
  const axes = [{ key: "s.a", values: [1, 2] }, { key: "s.b", values: ["x", "y"] },
                { key: "s.c", values: [true, false] }];
  const got = landscapeAxes(attempts, axes);
  assert.deepEqual(got.map((a) => a.title), ["s.a", "s.c", "speedup"]);
  assert.deepEqual(got[1].categories, [true, false]);
  assert.equal(got[1].value(attempts[1]), false);
  const model = landscapeAxes([{ number: 1, runtime_us: 5, roofline: { achieved_bytes_per_s: 2e9 } }], []);
  assert.deepEqual(model.map((a) => a.title), ["attempt", "runtime (us)", "bandwidth (GB/s)"]);
  assert.equal(model[2].value({ roofline: { achieved_bytes_per_s: 2e9 } }), 2);
});

test("intentForest nests intents under their parents and counts statuses", () => {
  const intents = [{ id: 0, parent: null, status: "trying" }, { id: 1, parent: 0, status: "succeeded" },
                   { id: 2, parent: 1, status: "failed" }, { id: 3, parent: 0, status: "open" }];
  const forest = intentForest(intents);
  assert.equal(forest.length, 1);
  assert.deepEqual(forest[0].children.map((c) => c.intent.id), [1, 3]);
  assert.deepEqual(forest[0].children[0].children.map((c) => c.intent.id), [2]);
  assert.deepEqual(statusCounts(intents), { open: 1, trying: 1, succeeded: 1, failed: 1, pruned: 0 });
});

test("strategyRows gives one row per class with a record, then all classes", () => {
  const rows = strategyRows({
    classes: ["pointwise"],
    strategies: [{ id: "s", classes: { pointwise: { problems: 2, win_rate: 0.5 } },
                   all: { problems: 2, win_rate: 0.5 } }, { id: "t", classes: {}, all: { problems: 0 } }],
  });
  assert.deepEqual(rows.map((r) => `${r.id}/${r.cls}/${r.problems}`), ["s/pointwise/2", "s/all/2", "t/all/0"]);
});

test("escapeHtml escapes markup", () => {
  assert.equal(escapeHtml(`<a href="x">&'</a>`), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
});

test("chartSpec draws every kind of chart_data", () => {
  const bars = chartSpec({ kind: "bars", title: "t", categories: ["a", "b"],
                           series: [{ name: "ours", values: [0.5, null] },
                                    { name: "KB", hardware: "H100", values: [0.3, 0.2] }],
                           x: { label: "x", scale: "category" }, y: { label: "y", scale: "linear", range: [0, 1] } });
  assert.equal(bars.traces.length, 2);
  assert.equal(bars.traces[1].name, "KB (H100)");
  assert.equal(bars.layout.barmode, "group");
  assert.deepEqual(bars.layout.yaxis.range, [0, 1]);
  const box = chartSpec({ kind: "box", series: [{ name: "r", values: [1, 2] }], y: { scale: "log" } });
  assert.equal(box.traces[0].type, "box");
  assert.equal(box.layout.yaxis.type, "log");
  const lines = chartSpec({ kind: "lines", series: [{ name: "r", x: [1, 2], y: [0.1, 0.2] }] });
  assert.equal(lines.traces[0].mode, "lines+markers");
  const scatter = chartSpec({ kind: "scatter", series: [{ name: "r", x: [1], y: [2] },
                                                        { name: "frontier", frontier: true, x: [1], y: [2] }] });
  assert.equal(scatter.traces[0].mode, "markers");
  assert.equal(scatter.traces[1].line.dash, "dot");
  const heat = chartSpec({ kind: "heatmap", x: { categories: ["r"] }, y: { categories: ["p"] },
                           z: [[1.5]], text: [["1.5x"]] });
  assert.deepEqual(heat.traces[0].z, [[1.5]]);
  assert.equal(chartSpec({ kind: "pie" }), null);
});

test("gaugeSvg draws the value's bar, the number and an escaped title", () => {
  const svg = gaugeSvg(0.4567, "best #3: <bandwidth>");
  assert.match(svg, /<text [^>]*class="number">45\.7%<\/text>/);
  assert.match(svg, /class="title">best #3: &lt;bandwidth&gt;<\/text>/);
  assert.equal((svg.match(/class="bar"/g) || []).length, 1);
  assert.ok(!gaugeSvg(0, "t").includes('class="bar"'), "no bar at 0 %");
  assert.match(gaugeSvg(null, "t"), /class="number">0%</);
  assert.match(gaugeSvg(1.7, "t"), /class="number">170%</, "the number says what it is");
  // The dial runs from the left end (0 %) over the top (50 %) to the right end (100 %).
  const [lx, ly] = dialPoint(0, 80), [tx, ty] = dialPoint(50, 80), [rx, ry] = dialPoint(100, 80);
  assert.ok(lx < tx && tx < rx && ty < ly && Math.abs(ly - ry) < 1e-9);
  assert.deepEqual(dialPoint(150, 80), dialPoint(100, 80), "clamped to the dial");
  // The bar ends where the value is.
  const [bx, by] = dialPoint(45.7, 77).map((v) => v.toFixed(2));
  assert.ok(bandPath(0, 45.7, 77, 61).includes(`${bx},${by}`));
  assert.ok(svg.includes(bandPath(0, 45.7, 77, 61)));
});

test("scatter3d: the default view is Plotly's camera and the projection is orthographic", () => {
  const b = cameraBasis(DEFAULT_VIEW);
  for (const v of [b.eye, b.right, b.up]) assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-12);
  assert.ok(Math.abs(b.eye[0] * b.up[0] + b.eye[1] * b.up[1] + b.eye[2] * b.up[2]) < 1e-12);
  assert.ok(Math.abs(b.eye[0] / b.eye[2] - 1.7 / 1.1) < 1e-9, "eye along (1.7, 1.7, 1.1)");
  // x goes down-left, y down-right, z straight up; the corner nearest the eye is (1, 1, 1).
  const p = (v) => project(v, b, 100);
  assert.ok(p([1, 0, 0]).x < 0 && p([1, 0, 0]).y > 0);
  assert.ok(p([0, 1, 0]).x > 0 && p([0, 1, 0]).y > 0);
  assert.ok(Math.abs(p([0, 0, 1]).x) < 1e-9 && p([0, 0, 1]).y < 0);
  assert.ok(p([1, 1, 1]).depth > p([-1, -1, -1]).depth);
  // Orthographic: the same offset moves every point by the same pixels, whatever its depth.
  const d1 = p([0.5, 0, 0]).x - p([0, 0, 0]).x, d2 = p([0.5, 1, 1]).x - p([0, 1, 1]).x;
  assert.ok(Math.abs(d1 - d2) < 1e-9);
  assert.deepEqual(project([0, 0, 0], b, 50, 200, 100), { x: 200, y: 100, depth: 0 });
});

test("scatter3d: dragging turns and tilts the view, within limits", () => {
  const v = rotate(DEFAULT_VIEW, 100, 0);
  assert.ok(v.azimuth < DEFAULT_VIEW.azimuth && v.elevation === DEFAULT_VIEW.elevation);
  assert.ok(rotate(DEFAULT_VIEW, 0, 20).elevation > DEFAULT_VIEW.elevation);
  assert.ok(Math.abs(rotate(DEFAULT_VIEW, 0, 1e6).elevation - (85 * Math.PI) / 180) < 1e-12);
  assert.ok(Math.abs(rotate(DEFAULT_VIEW, 0, -1e6).elevation + (85 * Math.PI) / 180) < 1e-12);
  assert.equal(rotate(DEFAULT_VIEW, 5, 5).zoom, DEFAULT_VIEW.zoom);
});

test("scatter3d: ticks, tick labels and axis scales", () => {
  assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(niceTicks(0.13, 0.61, 4), [0.2, 0.4, 0.6]);
  assert.deepEqual(niceTicks(0.13, 0.61, 8), [0.2, 0.3, 0.4, 0.5, 0.6]);
  assert.deepEqual(niceTicks(0.17, 0.974, 4), [0.2, 0.4, 0.6, 0.8], "three ticks at least");
  assert.deepEqual(niceTicks(3, 3), [3]);
  assert.deepEqual(niceTicks(5, 1), []);
  assert.deepEqual([tickLabel(0), tickLabel(1.23456), tickLabel(250000), tickLabel(-0.5)],
                   ["0", "1.235", "2.5e+5", "-0.5"]);
  const num = axisScale("runtime", [10, 20, null, 30]);
  assert.ok(num.lo < 10 && num.hi > 30);
  assert.ok(Math.abs(num.unit(num.lo) + 1) < 1e-12 && Math.abs(num.unit(num.hi) - 1) < 1e-12);
  assert.ok(num.ticks.every((t) => t.value >= num.lo && t.value <= num.hi));
  const cat = axisScale("schedule", [0, 1, 1], ["a", "b", "c"]);
  assert.deepEqual(cat.ticks.map((t) => [t.value, t.label]), [[0, "a"], [1, "b"], [2, "c"]]);
  assert.ok(cat.unit(0) > -1 && cat.unit(2) < 1, "no category on a wall");
  const flat = axisScale("one value", [4, 4]);
  assert.ok(flat.lo < 4 && flat.hi > 4);
  assert.deepEqual(axisScale("nothing", []).ticks.length > 0, true);
});

test("scatter3d: colours, labelled edges, back walls and the hit test", () => {
  assert.equal(viridis(0), "rgb(68,1,84)");
  assert.equal(viridis(1), "rgb(253,231,37)");
  assert.equal(viridis(2), viridis(1));
  assert.equal(viridis(NaN), viridis(0));
  const b = cameraBasis(DEFAULT_VIEW);
  const edges = labelEdges(b);
  // x and y ticks on the box's floor, z ticks on a vertical edge; the back walls face away.
  assert.equal(edges[0][0][2], -1);
  assert.equal(edges[1][0][2], -1);
  assert.deepEqual([edges[2][0][2], edges[2][1][2]], [-1, 1]);
  assert.deepEqual(backWalls(b), [{ axis: 0, side: -1 }, { axis: 1, side: -1 }, { axis: 2, side: -1 }]);
  const pts = [{ x: 0, y: 0, depth: 0 }, { x: 10, y: 0, depth: 0 }, { x: 10, y: 0, depth: 1 }];
  assert.equal(nearestPoint(pts, 1, 1), 0);
  assert.equal(nearestPoint(pts, 10, 0), 2, "the nearer of two at the same place");
  assert.equal(nearestPoint(pts, 50, 50), -1);
});

test("scatter3d: layoutScatter leaves out points missing a coordinate and spans the colours", () => {
  const model = layoutScatter({
    axes: [{ title: "a", categories: ["x", "y"] }, { title: "b" }, { title: "c" }],
    points: [{ id: 1, coords: [0, 1, 2], colour: 1, lines: [] },
             { id: 2, coords: [1, 3, null], colour: 9, lines: [] },
             { id: 3, coords: [1, 5, 6], colour: 3, lines: [] }],
  });
  assert.deepEqual(model.points.map((p) => p.id), [1, 3]);
  assert.deepEqual([model.cmin, model.cmax], [1, 3]);
  assert.deepEqual(model.points.map((p) => p.t), [0, 1]);
  for (const p of model.points) assert.ok(p.unit.every((u) => u > -1 && u < 1));
  assert.deepEqual(model.axes.map((a) => a.title), ["a", "b", "c"]);
});
