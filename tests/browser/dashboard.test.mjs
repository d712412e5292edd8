// The dashboard in Debian's chromium, driven by playwright-core (pinned in package-lock.json;
// the system browser, nothing downloaded), over real CPU sessions of `openkernel optimize` with
// the builtin generator:
// - a session is followed live: every attempt the engine (another process) records appears in
//   the page within 2 s of its row's time;
// - once it ends, every panel renders with data and the page logged no console error;
// - the experiment table sorts and filters; the diff shows two chosen attempts, highlighted;
// - the utilisation gauges are drawn; the landscape's hover names a point's attempt and
//   configuration, a click selects it, a drag turns the view;
// - a second session shows up in the picker and in the panels across sessions;
// - the 2D plots (our SVG charts, web/js/chart.js): hovering a point shows its attempt and
//   value, a box dragged over the trajectory zooms into it (its axis range changes) and a
//   double click restores it, a legend entry hides its series;
// - the Charts page draws (with Plotly's cartesian bundle, loaded then, and only then), and back
//   on the dashboard a click on a trajectory point still selects its attempt;
// - a screenshot of every panel is saved (DASHBOARD_SCREENSHOTS=docs/dashboard to refresh the
//   docs' pictures; a temporary folder otherwise).
// A second test opens a synthetic 500-attempt session (dashboard_synth, as the bench does): the
// table draws only the rows in view and follows the scroll, sorts, filters and selects over all
// 500; the landscape draws every attempt. A third opens a synthetic session whose attempts carry
// a recorded deep profile (ncu's raw page of python/tests/data/profiling, parsed by the worker's
// ncu_report): the utilisation and roofline panels show its measured numbers, marked as ncu's.
// Skips, saying why, without chromium, node_modules or the built binaries.
//
//   node --test tests/browser/dashboard.test.mjs
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = process.env.OPENKERNEL_BIN_DIR || join(ROOT, "build/release/bin");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const PYTHON = process.env.OPENKERNEL_PYTHON || "/usr/bin/python3";
const PANELS = ["trajectory", "roofline", "utilisation", "table", "diff", "landscape", "tree",
                "convergence", "cost", "strategies"];
const QUICK = ["--trials", "2", "--timing-budget", "0.3", "--timeout", "120", "--backend", "cpu",
               "--model", "builtin", "--reference", join(ROOT, "examples/swish_chain/reference.py")];

function missing() {
  if (!existsSync(CHROMIUM)) return `no chromium at ${CHROMIUM} (scripts/setup.sh --tests installs it)`;
  if (!existsSync(join(ROOT, "node_modules/playwright-core"))) {
    return "no node_modules/playwright-core (scripts/setup.sh runs npm ci)";
  }
  for (const b of ["openkernel", "kernel-code"]) {
    if (!existsSync(join(BIN, b))) return `no ${b} binary in ${BIN} (build it first)`;
  }
  return null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, fn, timeoutMs, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

function start(cmd, args, env) {
  const p = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  p.out = "";
  p.err = "";
  p.stdout.on("data", (d) => { p.out += d; });
  p.stderr.on("data", (d) => { p.err += d; });
  p.done = new Promise((r) => p.on("exit", (code) => r(code)));
  return p;
}

async function api(base, path) {
  const res = await fetch(new URL(path, base));
  if (!res.ok) return null;
  return res.json();
}

const reason = missing();

test("the dashboard follows real sessions and renders every panel", { skip: reason ?? false,
                                                                        timeout: 900_000 }, async () => {
  const require = createRequire(import.meta.url);
  const { chromium } = require(join(ROOT, "node_modules/playwright-core"));
  const tmp = mkdtempSync(join(tmpdir(), "ok-dashboard-"));
  const shots = process.env.DASHBOARD_SCREENSHOTS
    ? resolve(ROOT, process.env.DASHBOARD_SCREENSHOTS) : join(tmp, "shots");
  mkdirSync(shots, { recursive: true });
  const env = { ...process.env, OPENKERNEL_PYTHON: PYTHON, XDG_CONFIG_HOME: join(tmp, "config"),
                XDG_CACHE_HOME: join(tmp, "cache"), XDG_DATA_HOME: join(tmp, "data") };
  delete env.OPENKERNEL_API_KEY;
  const db = join(tmp, "db.sqlite");
  const procs = [];
  let browser;
  try {
    const first = start(join(BIN, "openkernel"), ["optimize", "--db", db, "--session", "live",
      "--iterations", "3", "--out", join(tmp, "out-live"), ...QUICK], env);
    procs.push(first);
    await until("the store", () => existsSync(db), 120_000);
    const dash = start(join(BIN, "kernel-code"), ["dashboard", "--db", db, "--port", "0"], env);
    procs.push(dash);
    const url = (await until("the dashboard's URL", () => dash.out.match(/http:\/\/\S+/), 30_000))[0];
    await until("the live session", async () => (await api(url, "/api/sessions/live")) !== null, 120_000);

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
                                      args: ["--no-sandbox", "--use-gl=swiftshader", "--enable-unsafe-swiftshader"] });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${url}?session=live`);
    await page.waitForFunction(() => document.body.dataset.ready === "1", null, { timeout: 30_000 });
    const openedAt = Date.now();

    // Live: each attempt recorded after the page opened shows within 2 s of its row's time.
    assert.equal(await first.done, 0, first.err);
    const live = await api(url, "/api/sessions/live");
    assert.equal(live.attempts.length, 3);
    await page.waitForFunction(() => Object.keys(window.okDashboard.seen).length === 3, null,
                               { timeout: 10_000 });
    const seen = await page.evaluate(() => window.okDashboard.seen);
    let measured = 0;
    for (const a of live.attempts) {
      const recorded = Date.parse(a.created_at);
      if (recorded < openedAt) continue;
      measured++;
      const lag = seen[a.number] - recorded;
      assert.ok(lag < 2000, `attempt ${a.number} appeared ${lag} ms after it was recorded`);
    }
    assert.ok(measured >= 1, "no attempt was recorded while the page was open");

    // A second session, with another strategy: the picker and the panels across sessions.
    const second = start(join(BIN, "openkernel"), ["optimize", "--db", db, "--session", "second",
      "--iterations", "2", "--strategy", "seed-explore", "--out", join(tmp, "out-2"), ...QUICK], env);
    procs.push(second);
    assert.equal(await second.done, 0, second.err);
    await page.waitForFunction(() => document.querySelectorAll("#session-picker option").length === 2,
                               null, { timeout: 15_000 });
    await page.waitForFunction(
      () => document.querySelector("#panel-strategies tbody")?.textContent.includes("seed-explore"),
      null, { timeout: 10_000 });

    for (const name of PANELS) {
      const state = await page.getAttribute(`#panel-${name}`, "data-state");
      assert.equal(state, "ready", `panel ${name} is ${state}`);
    }
    const traces = await page.evaluate(() => document.querySelectorAll("#panel-convergence .chart-view .series").length);
    assert.ok(traces >= 4, `convergence draws both sessions over attempts and time (${traces} traces)`);

    // The table sorts (speedup descending, then ascending) and filters.
    const speeds = () => page.$$eval("#panel-table tbody tr", (rows) => rows.map((r) =>
      parseFloat(r.querySelector(".c-speedup").textContent) || null));
    await page.click('#panel-table th[data-key="speedup"]');
    const down = (await speeds()).filter((x) => x !== null);
    assert.deepEqual(down, [...down].sort((a, b) => b - a));
    await page.click('#panel-table th[data-key="speedup"]');
    const up = (await speeds()).filter((x) => x !== null);
    assert.deepEqual(up, [...up].sort((a, b) => a - b));
    const correct = live.attempts.filter((a) => a.verdict === "correct").length;
    await page.fill("#table-filter", "verdict:correct");
    assert.equal((await page.$$("#panel-table tbody tr")).length, correct);
    await page.fill("#table-filter", "no-such-attempt-text");
    assert.equal((await page.$$("#panel-table tbody tr")).length, 0);
    await page.fill("#table-filter", "");

    // The diff of two chosen attempts, highlighted.
    await page.selectOption("#diff-a", "1");
    await page.selectOption("#diff-b", "3");
    // Both choices drawn: a render for the first choice alone ("#1 → #<earlier b>") can come
    // first, while the second's source is still being fetched.
    await page.waitForFunction(() => /^#1 .* → #3 /.test(document.querySelector("#panel-diff .count")?.textContent ?? ""),
                               null, { timeout: 10_000 });
    const head = await page.textContent("#panel-diff .count");
    assert.match(head, /^#1 .* → #3 /);
    assert.ok((await page.$$("#panel-diff tr.d-add")).length + (await page.$$("#panel-diff tr.d-del")).length > 0,
              "attempts 1 and 3 differ");
    assert.ok((await page.$$("#panel-diff .hljs-keyword")).length > 0, "the code is highlighted");

    for (const name of PANELS) {
      await page.locator(`#panel-${name}`).screenshot({ path: join(shots, `${name}.png`) });
    }

    // The SVG charts: every 2D panel is one, and no Plotly was loaded for them.
    for (const name of ["trajectory", "roofline", "convergence", "cost", "strategies"]) {
      assert.ok(await page.$(`#panel-${name} .chart-view svg.chart .plot-area`), `${name} is an SVG chart`);
    }
    assert.equal(await page.evaluate(() => typeof window.Plotly), "undefined", "no Plotly before the Charts page");
    // Hover: a trajectory point's tooltip names its attempt and its speedup.
    const traj = page.locator("#panel-trajectory");
    await traj.scrollIntoViewIfNeeded();
    const dot = traj.locator(".series .points .pt").first();
    const dotBox = await dot.boundingBox();
    await page.mouse.move(dotBox.x + dotBox.width / 2, dotBox.y + dotBox.height / 2);
    const trajTip = traj.locator(".tooltip");
    await trajTip.waitFor({ state: "visible", timeout: 5_000 });
    const firstOk = live.attempts.find((a) => a.correct && typeof a.speedup === "number");
    assert.match(await trajTip.innerText(), new RegExp(`^#${firstOk.number} correct ${firstOk.speedup.toFixed(3)}x`));
    // Box zoom over the middle of the plot: the x axis' range narrows; a double click restores it.
    const domain = () => traj.evaluate((p) => p.querySelector(".chart-view").okChart.layout.plots[0].x.domain);
    const full = await domain();
    const area = await traj.locator("svg.chart rect.bg").boundingBox();
    await page.mouse.move(area.x + area.width * 0.3, area.y + area.height * 0.2);
    await page.mouse.down();
    await page.mouse.move(area.x + area.width * 0.6, area.y + area.height * 0.8, { steps: 4 });
    await page.mouse.up();
    const zoomed = await domain();
    assert.ok(zoomed[0] > full[0] && zoomed[1] < full[1], `zoomed ${zoomed} within ${full}`);
    await page.mouse.dblclick(area.x + area.width * 0.5, area.y + area.height * 0.5);
    assert.deepEqual(await domain(), full, "a double click restores the range");
    // The legend: "best so far" hidden, then shown again.
    const entry = traj.locator('.legend-item[data-group="best so far"]');
    await entry.click();
    assert.equal(await traj.locator('.series[data-group="best so far"]').count(), 0);
    assert.equal(await entry.getAttribute("aria-pressed"), "false");
    await entry.click();
    assert.equal(await traj.locator('.series[data-group="best so far"]').count(), 1);

    // The utilisation gauges: four SVG dials naming the best and the selected attempt.
    const gauges = await page.$$eval("#panel-utilisation svg.gauge", (gs) => gs.map((g) => g.getAttribute("aria-label")));
    assert.equal(gauges.length, 4);
    assert.match(gauges[0], /^best #\d+: bandwidth: [\d.]+%$/);

    // The landscape (a canvas 3D scatter): its points drawn, a point's hover names the attempt
    // and its configuration, a click selects it (the diff's right-hand side), a drag turns it.
    const canvas = page.locator("#panel-landscape canvas.scatter3d");
    await canvas.scrollIntoViewIfNeeded();
    const drawnPoints = Number(await canvas.getAttribute("data-points"));
    assert.ok(drawnPoints >= 1 && drawnPoints <= live.attempts.length, `${drawnPoints} points drawn`);
    const target = await page.evaluate(() => {
      const c = document.querySelector("#panel-landscape canvas.scatter3d");
      const r = c.getBoundingClientRect();
      const d = c.okScatter.drawn[c.okScatter.drawn.length - 1];  // the nearest: drawn last
      return { x: r.left + d.x, y: r.top + d.y, number: d.point.id, axes: c.okScatter.model.axes.map((a) => a.title) };
    });
    await page.mouse.move(target.x, target.y);
    const tip = page.locator("#panel-landscape .tooltip3d");
    await tip.waitFor({ state: "visible", timeout: 5_000 });
    const tipText = await tip.innerText();
    assert.match(tipText, new RegExp(`^#${target.number} `));
    for (const axis of target.axes) assert.ok(tipText.includes(`${axis}: `), `${axis} in ${tipText}`);
    await page.mouse.click(target.x, target.y);
    await page.waitForFunction((n) => document.querySelector("#diff-b").value === String(n), target.number,
                               { timeout: 5_000 });
    const view = () => page.evaluate(() => document.querySelector("#panel-landscape canvas").okScatter.view);
    const before = await view();
    const pixels = () => canvas.evaluate((c) => c.toDataURL());
    const imageBefore = await pixels();
    await page.mouse.move(target.x - 60, target.y);
    await page.mouse.down();
    await page.mouse.move(target.x + 40, target.y + 30, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction((az) => document.querySelector("#panel-landscape canvas").okScatter.view.azimuth !== az,
                               before.azimuth, { timeout: 5_000 });
    assert.ok((await view()).elevation > before.elevation, "dragging down tilts the box");
    await page.waitForFunction((img) => document.querySelector("#panel-landscape canvas").toDataURL() !== img,
                               imageBefore, { timeout: 5_000 });
    await page.mouse.move(0, 0);
    // The Charts page: chart_data of the store's sessions (src/charts), drawn with Plotly.
    await page.click('nav button[data-page="charts"]');
    await page.waitForFunction(() => document.querySelector("#panel-charts").dataset.state, null,
                               { timeout: 20_000 });
    assert.equal(await page.getAttribute("#panel-charts", "data-state"), "ready");
    const charts = await page.$$eval("#panel-charts figure.chart", (fs) => fs.map((f) => f.dataset.chart));
    assert.ok(charts.includes("scaling") && charts.includes("speedup_distribution"), charts.join());
    await page.locator('#panel-charts figure[data-chart="scaling"]').screenshot({ path: join(shots, "charts_scaling.png") });
    // Back on the dashboard: its plots are drawn again by the Charts page's Plotly (the cartesian
    // bundle replaced the basic one) and a click on a trajectory point still selects its attempt.
    const firstCorrect = live.attempts.find((a) => a.correct && typeof a.speedup === "number").number;
    const other = live.attempts.map((a) => a.number).find((n) => n !== firstCorrect);
    await page.click('nav button[data-page="session"]');
    await page.selectOption("#diff-b", String(other));
    const point = page.locator("#panel-trajectory .series .points .pt").first();
    await point.waitFor({ state: "visible", timeout: 10_000 });
    await point.scrollIntoViewIfNeeded();
    const at = await point.boundingBox();
    await page.mouse.move(at.x + at.width / 2, at.y + at.height / 2);
    await page.mouse.click(at.x + at.width / 2, at.y + at.height / 2);
    await page.waitForFunction((n) => document.querySelector("#diff-b").value === String(n), firstCorrect,
                               { timeout: 5_000 });
    for (const name of PANELS) {
      assert.equal(await page.getAttribute(`#panel-${name}`, "data-state"), "ready", `${name} after the Charts page`);
    }
    assert.equal(await page.evaluate(() => document.querySelectorAll("#page-session .js-plotly-plot").length), 0,
                 "the dashboard's plots are not Plotly's");
    assert.deepEqual(errors, [], "console errors");
    assert.deepEqual(await page.evaluate(() => window.okDashboard.errors), []);
  } finally {
    if (browser) await browser.close();
    for (const p of procs) if (p.exitCode === null) p.kill("SIGTERM");
    if (!process.env.DASHBOARD_KEEP) rmSync(tmp, { recursive: true, force: true });
  }
});


// With DASHBOARD_SCREENSHOTS, a screenshot of `panel` (one of the first screen's) under that
// folder: the page scrolled to the top (below the sticky header) and the pointer away.
async function shot(page, panel, name) {
  if (!process.env.DASHBOARD_SCREENSHOTS) return;
  await page.mouse.move(0, 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  await panel.screenshot({ path: join(resolve(ROOT, process.env.DASHBOARD_SCREENSHOTS), name) });
}

const SYNTH_SKIP = reason ?? (existsSync(join(BIN, "dashboard_synth")) ? false : `no dashboard_synth in ${BIN}`);

// A synthetic session (dashboard_synth DB --session ID ...args; `prepare(tmp)` may return more
// args) served by the dashboard and opened in chromium; `check({page, url})` runs on the page once
// it is ready, and the page must log no error.
async function onSyntheticSession(id, args, check, prepare = async () => []) {
  const require = createRequire(import.meta.url);
  const { chromium } = require(join(ROOT, "node_modules/playwright-core"));
  const tmp = mkdtempSync(join(tmpdir(), `ok-dashboard-${id}-`));
  const db = join(tmp, "db.sqlite");
  let browser, dash;
  try {
    const synth = start(join(BIN, "dashboard_synth"), [db, "--session", id, ...args, ...await prepare(tmp)],
                        process.env);
    assert.equal(await synth.done, 0, synth.err);
    dash = start(join(BIN, "kernel-code"), ["dashboard", "--db", db, "--port", "0"], process.env);
    const url = (await until("the dashboard's URL", () => dash.out.match(/http:\/\/\S+/), 30_000))[0];
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${url}?session=${id}`);
    await page.waitForFunction(() => document.body.dataset.ready === "1", null, { timeout: 60_000 });
    await check({ page, url });
    assert.deepEqual(errors, [], "console errors");
  } finally {
    if (browser) await browser.close();
    if (dash && dash.exitCode === null) dash.kill("SIGTERM");
    rmSync(tmp, { recursive: true, force: true });
  }
}

test("a 500-attempt session: the table draws the rows in view, the landscape every attempt",
     { skip: SYNTH_SKIP, timeout: 300_000 }, () => onSyntheticSession("big", ["--attempts", "500"], async ({ page, url }) => {
    const big = await api(url, "/api/sessions/big");

    // The rows drawn: a contiguous stretch of the order, which covers what is in view.
    const drawn = () => page.$$eval("#panel-table tbody tr[data-number]", (rows) => rows.map((r) => Number(r.dataset.number)));
    const inView = () => page.evaluate(() => {
      const box = document.querySelector("#panel-table .scroll").getBoundingClientRect();
      const head = document.querySelector("#panel-table th").getBoundingClientRect();  // sticky
      return [...document.querySelectorAll("#panel-table tbody tr[data-number]")]
        .filter((r) => { const b = r.getBoundingClientRect(); return b.top >= head.bottom - 1 && b.bottom <= box.bottom + 1; })
        .map((r) => Number(r.dataset.number));
    });
    assert.match(await page.textContent("#panel-table .count"), /^500 of 500 attempts/);
    let rows = await drawn();
    assert.ok(rows.length >= 17 && rows.length < 100, `${rows.length} rows drawn`);
    assert.deepEqual(rows, rows.map((_, i) => i + 1), "the first rows, in order");
    await page.$eval("#panel-table .scroll", (el) => { el.scrollTop = 6000; });
    await page.waitForFunction(() => document.querySelector('#panel-table tbody tr[data-number="260"]'), null,
                               { timeout: 5_000 });
    rows = await drawn();
    assert.deepEqual(rows, rows.map((_, i) => rows[0] + i), "a contiguous stretch");
    const seen = await inView();
    assert.ok(seen.length >= 10 && seen[0] >= 240 && seen[0] <= 262, `in view: ${seen.join(",")}`);
    await page.$eval("#panel-table .scroll", (el) => { el.scrollTop = el.scrollHeight; });
    await page.waitForFunction(() => document.querySelector('#panel-table tbody tr[data-number="500"]'), null,
                               { timeout: 5_000 });
    assert.equal((await inView()).at(-1), 500, "the last row can be scrolled to");

    // Sorting and filtering work over all 500, not the rows drawn.
    await page.click('#panel-table th[data-key="speedup"]');
    const best = Math.max(...big.attempts.filter((a) => a.correct && typeof a.speedup === "number").map((a) => a.speedup));
    const top = await page.textContent("#panel-table tbody tr[data-number] .c-speedup");
    assert.equal(parseFloat(top), Number(best.toFixed(best >= 100 ? 0 : 3)));
    const correct = big.attempts.filter((a) => a.verdict === "correct").length;
    await page.fill("#table-filter", "verdict:correct");
    assert.match(await page.textContent("#panel-table .count"), new RegExp(`^${correct} of 500 attempts`));
    await page.fill("#table-filter", "");
    // A drawn row selects its attempt.
    const pick = (await drawn())[3];
    await page.click(`#panel-table tbody tr[data-number="${pick}"]`);
    await page.waitForFunction((n) => document.querySelector("#diff-b").value === String(n), pick, { timeout: 5_000 });

    assert.equal(await page.getAttribute("#panel-landscape canvas.scatter3d", "data-points"), "500");
}));

test("a recorded deep profile: the utilisation and roofline panels show ncu's measured numbers",
     { skip: SYNTH_SKIP, timeout: 300_000 }, () => onSyntheticSession("prof", ["--attempts", "40"], async ({ page, url }) => {
    const data = await api(url, "/api/sessions/prof");
    const profiled = data.attempts.filter((a) => a.profile);
    assert.ok(profiled.length >= 1, "some attempt carries the profile");
    const p = profiled[0].profile;
    assert.equal(p.tool, "ncu");
    assert.equal(p.kernels, 2);

    // Select the profiled attempt (a row of the table): its gauges are ncu's, marked so.
    const n = profiled[0].number;
    await page.fill("#table-filter", "verdict:correct");
    await page.click(`#panel-table tbody tr[data-number="${n}"]`);
    const set = page.locator(`#panel-utilisation .gauge-set[data-attempt="${n}"][data-source="measured"]`);
    await set.waitFor({ timeout: 5_000 });
    assert.match(await set.locator("figcaption").innerText(), /measured by ncu \(2 kernels, longest /);
    const labels = await set.locator("svg.gauge").evaluateAll((gs) => gs.map((g) => g.getAttribute("aria-label")));
    const pct = (v) => `${Math.round(10 * v) / 10}%`;
    assert.deepEqual(labels, [`selected #${n}: DRAM throughput (ncu): ${pct(p.dram_throughput_pct)}`,
                              `selected #${n}: SM throughput (ncu): ${pct(p.sm_throughput_pct)}`,
                              `selected #${n}: achieved occupancy (ncu): ${pct(p.achieved_occupancy_pct)}`]);
    await shot(page, page.locator("#panel-utilisation"), "utilisation_ncu.png");
    // An attempt without a profile: the analytical estimate, marked so.
    const plain = data.attempts.find((a) => a.roofline && !a.profile).number;
    await page.fill("#table-filter", "");
    await page.selectOption("#diff-b", String(plain));
    await page.$eval("#panel-table .scroll", (el) => { el.scrollTop = 0; });
    await page.click(`#panel-table tbody tr[data-number="${plain}"]`);
    await page.locator(`#panel-utilisation .gauge-set[data-attempt="${plain}"][data-source="estimate"]`).waitFor({ timeout: 5_000 });

    // The roofline: the measured points at ncu's intensity and FLOP/s, beside the estimates.
    const roof = page.locator("#panel-roofline");
    await roof.scrollIntoViewIfNeeded();
    const measured = roof.locator('.series[data-group="measured (ncu)"] .pt');
    assert.equal(await measured.count(), profiled.length);
    assert.ok(await roof.locator('.legend-item[data-group="measured (ncu)"]').count() === 1);
    const hit = await roof.evaluate((el, num) => {
      const st = el.querySelector(".chart-view").okChart;
      const h = st.layout.hits.find((x) => x.series.name === "measured (ncu)" && x.point.id === num);
      return { x: h.point.x, y: h.point.y };
    }, n);
    assert.equal(hit.x, p.roofline.intensity);
    assert.equal(hit.y, p.roofline.flops_per_s);
    const box = await measured.first().boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const tip = roof.locator(".tooltip");
    await tip.waitFor({ state: "visible", timeout: 5_000 });
    assert.match(await tip.innerText(), /measured by ncu: /);
    await shot(page, roof, "roofline_ncu.png");
}, async (tmp) => {
  // The profile as the worker records it: ncu's raw page parsed by ncu_report (docs/profiling.md).
  const profileFile = join(tmp, "profile.json");
  const parse = start(PYTHON, ["-c", [
    "import json, sys", "from openkernel_worker import ncu_report",
    "k = ncu_report.parse_raw(open(sys.argv[1]).read())",
    "json.dump({'tier': 'deep', 'requested_tier': 'deep', 'kernel_metrics': k, 'flags': [],",
    "           'tool': {'name': 'ncu', 'version': 'fixture'}}, open(sys.argv[2], 'w'))"].join("\n"),
    join(ROOT, "python/tests/data/profiling/synthetic_raw.csv"), profileFile],
    { ...process.env, PYTHONPATH: join(ROOT, "python") });
  assert.equal(await parse.done, 0, parse.err);
  return ["--profile", profileFile];
}));
