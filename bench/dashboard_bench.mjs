// The dashboard on a 500-attempt session: how long each API route takes to answer (limit 200 ms)
// and how long chromium takes from navigation to the page's first complete render, every panel
// drawn (limit 1 s). The session is synthesised through the store API (dashboard_synth, built
// with the release preset), with a second, 100-attempt session of a priced model so the panels
// across sessions have two to compare.
//
// Two renders, reported apart (docs/dashboard.md, "Render time"):
// - cold: a fresh chromium profile (its own browser, an empty user-data folder), the first time a
//   user opens the page: nothing cached, every file downloaded and compiled. The 1 s limit is
//   this one's.
// - warm: the same profile opening the page again: files from chromium's HTTP cache (the
//   versioned paths are immutable: no request) and, from the third opening on, V8's code cache.
// The machine's load average is recorded with every render (the machine is shared).
//
// Side by side: --before BIN_DIR:HOME also serves the same store with another build's
// kernel-code (BIN_DIR) and page and npm packages (HOME, as OPENKERNEL_HOME), and alternates the
// loads of the two pages (each cold load of one followed by one of the other, the order swapped
// every round), so that both see the same machine; the ratios come from that one run. The limits
// are checked on this checkout's page only.
//
//   node bench/dashboard_bench.mjs [--out bench/results/cpu_dashboard_500_v2] [--cold N] [--warm N]
//                                  [--before BIN_DIR:HOME] [--screenshots DIR] [--trace N]
//                                  [--settle MS]
// --settle MS: how long a freshly launched chromium is left to finish starting before a cold
// load opens the page (default 2000; 0: at once, as in the v4 results and the v5 ones that say
// so, which charges the page with chromium's own start).
// --trace N: N more cold loads of each page under chromium's tracing (not counted in the
// medians above: tracing slows a load), each summarised as where the renderer's main thread
// spent its time (script, style, layout, paint, HTML parsing, garbage collection) and its
// longer tasks in order, with what ran in them.
// --screenshots DIR saves this checkout's landscape panel of the 500-attempt session there
// (landscape_500.png; docs/dashboard.md shows it).
// Writes OUT.json and OUT.txt; exits 1 when a limit is missed.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BIN = process.env.OPENKERNEL_BIN_DIR || join(ROOT, "build/release/bin");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const arg = (name, fallback) => (process.argv.includes(name)
  ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const out = arg("--out", null) && resolve(arg("--out"));
const API_LIMIT_MS = 200, RENDER_LIMIT_MS = 1000, REPEATS = 20;
const COLD = Number(arg("--cold", 5)), WARM = Number(arg("--warm", 5));
const BEFORE = arg("--before", null);
const SHOTS = arg("--screenshots", null) && resolve(arg("--screenshots"));
const TRACES = Number(arg("--trace", 0));
// ms a freshly launched chromium is left to finish its own start before the page is opened.
const SETTLE_MS = Number(arg("--settle", 2000));
const CHROMIUM_ARGS = ["--no-sandbox", "--use-gl=swiftshader", "--enable-unsafe-swiftshader"];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// now's median first complete render over before's.
const ratioOf = (now, before) => median(now.map((r) => r.first_render_ms)) /
  median(before.map((r) => r.first_render_ms));
// Round by round (the loads of a round are adjacent in time, so they saw nearly the same
// machine): in how many rounds now's load was the faster, the median of now - before, and the
// two-sided sign test's p-value of that count (ties left out). On this shared machine single
// loads spread by a factor of two, and one page's medians move by tens of ms from run to run
// (docs/dashboard.md, "Render time": the A/A runs).
function paired(now, before) {
  const d = now.map((r, i) => r.first_render_ms - before[i].first_render_ms);
  const n = d.filter((x) => x !== 0).length, k = d.filter((x) => x < 0).length;
  const choose = (a, b) => { let c = 1; for (let i = 1; i <= b; i++) c = (c * (a - b + i)) / i; return c; };
  let tail = 0;
  for (let i = 0; i <= Math.min(k, n - k); i++) tail += choose(n, i) / 2 ** n;
  return { rounds: d.length, now_faster: k, median_diff_ms: median(d), sign_test_p: Math.min(1, 2 * tail) };
}

function synth(db, args) {
  const p = spawnSync(join(BIN, "dashboard_synth"), [db, ...args], { encoding: "utf8" });
  if (p.status !== 0) throw new Error(`dashboard_synth: ${p.stderr}`);
}

async function timeRoute(base, path) {
  const times = [];
  let bytes = 0;
  for (let i = 0; i <= REPEATS; i++) {
    const t0 = performance.now();
    const res = await fetch(new URL(path, base));
    const body = await res.arrayBuffer();
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`);
    bytes = body.byteLength;
    if (i > 0) times.push(ms);  // the first request warms the connection
  }
  return { route: path, median_ms: median(times), max_ms: Math.max(...times), bytes };
}

// Starts `kernel-code dashboard` from binDir (with OPENKERNEL_HOME=home when given) on the store;
// resolves to {url, proc}.
function startDashboard(binDir, db, home = null) {
  const env = home ? { ...process.env, OPENKERNEL_HOME: home } : process.env;
  const proc = spawn(join(binDir, "kernel-code"), ["dashboard", "--db", db, "--port", "0"],
                     { env, stdio: ["ignore", "pipe", "inherit"] });
  let text = "";
  return new Promise((ok, fail) => {
    proc.stdout.on("data", (d) => {
      text += d;
      const m = text.match(/http:\/\/\S+/);
      if (m) ok({ url: m[0], proc });
    });
    proc.on("exit", (c) => fail(new Error(`the dashboard (${binDir}) exited with ${c}`)));
  });
}

const TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8",
                          "v8.execute", "blink.user_timing", "loading", "toplevel"];
// Trace event names of the renderer's main thread, by what they are.
const KINDS = {
  script: ["EvaluateScript", "v8.compile", "v8.compileModule", "v8.evaluateModule", "FunctionCall",
           "RunMicrotasks", "TimerFire", "FireAnimationFrame", "EventDispatch", "v8.callFunction"],
  style: ["UpdateLayoutTree", "ParseAuthorStyleSheet"],
  layout: ["Layout"], paint: ["PrePaint", "Paint", "Layerize", "Commit"], html: ["ParseHTML"],
  gc: ["MinorGC", "MajorGC", "V8.GC_SCAVENGER", "V8.GC_MARK_COMPACTOR"],
};

// Where the page's main thread (the renderer thread whose events name the page's host) spent a
// traced load: ms per kind (events nested in one of the same kind counted once), per script
// file evaluated, and the tasks over 15 ms (start and length, ms since navigation, with their
// largest parts); these are wall times, which include the waits of a descheduled thread on a
// loaded machine. `cpu_ms`: the CPU time the thread's tasks used from navigation to the first
// complete render (`firstMs`), the page's own work whatever the load; `threads_cpu_ms`: the same
// for every thread of chromium's processes (its top-level events' thread time; the six largest,
// as process/thread), which the load shares the machine's CPUs with.
function traceSummary(events, host, firstMs) {
  const count = new Map();
  for (const e of events) {
    if (JSON.stringify(e.args || {}).includes(host)) count.set(`${e.pid}:${e.tid}`, (count.get(`${e.pid}:${e.tid}`) || 0) + 1);
  }
  const [main] = [...count.entries()].sort((a, b) => b[1] - a[1])[0] || [""];
  const mine = events.filter((e) => `${e.pid}:${e.tid}` === main && e.ph === "X" && e.dur > 0);
  const nav = (events.find((e) => e.name === "navigationStart" && `${e.pid}:${e.tid}` === main) ||
               events.find((e) => e.name === "navigationStart") || { ts: 0 }).ts;
  const kindOf = new Map(Object.entries(KINDS).flatMap(([k, names]) => names.map((n) => [n, k])));
  const ms = {}, scripts = {};
  const open = [];  // [end, kind] of the enclosing events
  for (const e of [...mine].sort((a, b) => a.ts - b.ts || b.dur - a.dur)) {
    while (open.length && open[open.length - 1][0] <= e.ts) open.pop();
    const kind = kindOf.get(e.name);
    if (kind && !open.some(([, k]) => k === kind)) ms[kind] = (ms[kind] || 0) + e.dur / 1000;
    if (kind) open.push([e.ts + e.dur, kind]);
    const url = e.args && e.args.data && e.args.data.url;
    if (url && (e.name === "EvaluateScript" || e.name === "v8.evaluateModule")) {
      const file = url.replace(/.*\//, "");
      scripts[file] = (scripts[file] || 0) + e.dur / 1000;
    }
  }
  const round = (o) => Object.fromEntries(Object.entries(o).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => [k, Math.round(v)]));
  const tasks = mine.filter((e) => e.name === "RunTask" && e.dur > 15000).map((t) => {
    const parts = {};
    for (const e of mine) {
      if (e === t || e.ts < t.ts || e.ts + e.dur > t.ts + t.dur || !kindOf.has(e.name)) continue;
      parts[e.name] = (parts[e.name] || 0) + e.dur / 1000;
    }
    return { start_ms: Math.round((t.ts - nav) / 1000), ms: Math.round(t.dur / 1000),
             parts: Object.fromEntries(Object.entries(round(parts)).slice(0, 4)) };
  });
  const cpu = mine.filter((e) => e.name === "RunTask" && e.ts >= nav && e.ts <= nav + firstMs * 1000)
    .reduce((sum, e) => sum + (e.tdur || 0), 0);
  return { cpu_ms: Math.round(cpu / 1000), threads_cpu_ms: threadsCpu(events, nav, nav + firstMs * 1000),
           main_thread_ms: round(ms), scripts_ms: round(scripts), tasks };
}

// CPU ms per process/thread between `from` and `to` (trace µs): its outermost complete events'
// thread time.
function threadsCpu(events, from, to) {
  const names = new Map(), processes = new Map(), byThread = new Map();
  for (const e of events) {
    if (e.ph === "M" && e.name === "thread_name") names.set(`${e.pid}:${e.tid}`, e.args.name);
    if (e.ph === "M" && e.name === "process_name") processes.set(e.pid, e.args.name);
    if (e.ph !== "X" || e.tdur === undefined || e.ts < from || e.ts > to) continue;
    const key = `${e.pid}:${e.tid}`;
    if (!byThread.has(key)) byThread.set(key, []);
    byThread.get(key).push(e);
  }
  const cpu = [...byThread].map(([key, es]) => {
    let end = -1, sum = 0;
    for (const e of es.sort((a, b) => a.ts - b.ts || b.dur - a.dur)) {
      if (e.ts >= end) { sum += e.tdur; end = e.ts + e.dur; }
    }
    return [`${processes.get(Number(key.split(":")[0])) || "?"}/${names.get(key) || key}`, Math.round(sum / 1000)];
  });
  return Object.fromEntries(cpu.sort((a, b) => b[1] - a[1]).slice(0, 6));
}

function traceLines(what, t) {
  return [
    `  ${what} (first complete render ${t.first_render_ms} ms under tracing): main thread CPU ` +
      `${t.cpu_ms} ms until then (threads: ${Object.entries(t.threads_cpu_ms).map(([k, v]) => `${k} ${v}`).join(", ")}); ` +
      `main thread ms ` +
      Object.entries(t.main_thread_ms).map(([k, v]) => `${k} ${v}`).join(", ") +
      `; scripts evaluated ms ${Object.entries(t.scripts_ms).map(([k, v]) => `${k} ${v}`).join(", ") || "none over 0"}`,
    `    tasks over 15 ms (start+length: largest parts): ` + t.tasks.map((k) => `${k.start_ms}+${k.ms}` +
      `${Object.keys(k.parts).length ? ` (${Object.entries(k.parts).map(([n, v]) => `${n} ${v}`).join(", ")})` : ""}`).join("; "),
  ];
}

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), "ok-dashboard-bench-"));
  const db = join(tmp, "db.sqlite");
  synth(db, ["--session", "big", "--attempts", "500"]);
  synth(db, ["--session", "priced", "--attempts", "100", "--model", "synthetic/priced-model",
             "--cost-per-attempt", "0.02", "--seed", "2"]);
  const { url, proc: dash } = await startDashboard(BIN, db);
  // The pages measured: this checkout's ("now") and, side by side, --before's.
  const pages = [{ name: "now", url, proc: dash }];
  if (BEFORE) {
    const at = BEFORE.indexOf(":");
    if (at < 0) throw new Error("--before wants BIN_DIR:HOME");
    const other = await startDashboard(BEFORE.slice(0, at), db, BEFORE.slice(at + 1));
    pages.push({ name: "before", url: other.url, proc: other.proc, bin: BEFORE.slice(0, at),
                 home: BEFORE.slice(at + 1) });
  }
  const routes = [];
  for (const path of ["/api/sessions", "/api/sessions/big", "/api/sessions/big/intents",
                      "/api/sessions/big/events?after=0", "/api/sessions/big/attempts/250/source",
                      "/api/strategies", "/api/aggregates", "/api/charts"]) {
    routes.push(await timeRoute(url, path));
  }
  const require = createRequire(import.meta.url);
  const { chromium } = require(join(ROOT, "node_modules/playwright-core"));
  const profiles = [];
  // A browser just launched is still starting (chromium 156 loads its omnibox popup's WebUI in a
  // renderer of its own, about 0.2 s of CPU, while the first page loads): the cold loads open the
  // page once that is over, unless --settle 0 (docs/dashboard.md, "Render time").
  const settled = (x) => new Promise((ok) => setTimeout(() => ok(x), SETTLE_MS));
  const openProfile = () => {
    const dir = mkdtempSync(join(tmp, "profile-"));
    profiles.push(dir);
    return chromium.launchPersistentContext(dir, { executablePath: CHROMIUM, headless: true,
      args: CHROMIUM_ARGS, viewport: { width: 1400, height: 1000 } }).then(settled);
  };
  // The CPU time (user and system, ms, in 10 ms ticks) the dashboard serving `base` has used.
  const serverCpuMs = (base) => {
    const stat = readFileSync(`/proc/${pages.find((p) => p.url === base).proc.pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  };
  // One load of the page at `base`: navigation to every panel drawn, with the page's own marks
  // (web/js/app.js) and the server's CPU time meanwhile.
  const load = async (page, base) => {
    const cpu0 = serverCpuMs(base);
    const errors = [];
    const onConsole = (m) => { if (m.type() === "error") errors.push(m.text()); };
    page.on("console", onConsole);
    await page.goto(`${base}?session=big`);
    await page.waitForFunction(() => document.body.dataset.ready === "1", null, { timeout: 60_000 });
    const r = await page.evaluate(() => {
      const d = window.okDashboard;
      const round = (x) => (typeof x === "number" ? Math.round(x) : null);
      const plotly = performance.getEntriesByType("resource").find((e) => e.name.includes("plotly"));
      return { first_render_ms: round(d.firstRenderMs), module_start_ms: round(d.moduleStartMs),
               data_ms: round(d.dataMs), sources_ms: round(d.sourcesMs),
               text_panels_ms: round(d.textPanelsMs),
               plotly_ms: round(d.plotlyMs), plots_ms: round(d.plotsMs),
               landscape_start_ms: round(d.landscapeStartMs), drawn_ms: round(d.drawnMs),
               panels_ms: d.renderMs, errors: d.errors,
               plotly_bytes_transferred: plotly ? plotly.transferSize : null,
               ready: [...document.querySelectorAll(".panel[data-state]")]
                 .filter((p) => p.dataset.state === "ready").length };
    });
    page.off("console", onConsole);
    if (r.ready < 10) throw new Error(`only ${r.ready} panels ready`);
    if (errors.length || r.errors.length) throw new Error(`page errors: ${[...errors, ...r.errors]}`);
    return { ...r, server_cpu_ms: serverCpuMs(base) - cpu0, loadavg_1m: Number(loadavg()[0].toFixed(2)) };
  };
  const loadavgStart = loadavg()[0];
  // A first launch per page, not counted, brings chromium's own files and the page's into the
  // page cache.
  for (const p of pages) {
    const ctx = await openProfile();
    await load(ctx.pages()[0] || await ctx.newPage(), p.url);
    await ctx.close();
  }
  // Round i loads every page once, in turn; the order is reversed every other round.
  const inTurn = (i) => (i % 2 ? [...pages].reverse() : pages);
  for (const p of pages) { p.cold = []; p.warm = []; }
  for (let i = 0; i < COLD; i++) {
    for (const p of inTurn(i)) {
      const ctx = await openProfile();
      p.cold.push(await load(ctx.pages()[0] || await ctx.newPage(), p.url));
      if (i < COLD - 1) await ctx.close();
      else p.ctx = ctx;
    }
  }
  // Each page's last cold profile opens it again: a returning user.
  for (let i = 0; i < WARM; i++) {
    for (const p of inTurn(i)) p.warm.push(await load(p.ctx.pages()[0], p.url));
  }
  // Traced cold loads (not in the medians).
  for (const p of pages) {
    p.traces = [];
    for (let i = 0; i < TRACES; i++) {
      // A browser of its own with a fresh context: as cold as a fresh profile (tracing is a
      // browser's, which a persistent profile's context does not expose).
      const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
      const page = await settled(await browser.newPage({ viewport: { width: 1400, height: 1000 } }));
      await browser.startTracing(page, { categories: TRACE_CATEGORIES });
      const r = await load(page, p.url);
      const events = JSON.parse((await browser.stopTracing()).toString()).traceEvents;
      p.traces.push({ first_render_ms: r.first_render_ms, ...traceSummary(events, new URL(p.url).host, r.first_render_ms) });
      await browser.close();
    }
  }
  if (SHOTS) {
    await pages[0].ctx.pages()[0].locator("#panel-landscape")
      .screenshot({ path: join(SHOTS, "landscape_500.png") });
  }
  for (const p of pages) {
    await p.ctx.close();
    p.proc.kill("SIGTERM");
  }
  rmSync(tmp, { recursive: true, force: true });
  const chromiumVersion = spawnSync(CHROMIUM, ["--version"], { encoding: "utf8" }).stdout.trim();
  const summary = (runs) => ({
    median_ms: median(runs.map((r) => r.first_render_ms)),
    max_ms: Math.max(...runs.map((r) => r.first_render_ms)), runs,
  });
  const [now, before] = pages;
  const result = {
    attempts: 500, api_limit_ms: API_LIMIT_MS, render_limit_ms: RENDER_LIMIT_MS, routes,
    cold: summary(now.cold), warm: summary(now.warm),
    traces: now.traces,
    ...(before ? { before: { bin_dir: before.bin, home: before.home, cold: summary(before.cold),
                             warm: summary(before.warm), traces: before.traces },
                   ratio_cold: ratioOf(now.cold, before.cold),
                   paired_cold: paired(now.cold, before.cold),
                   ratio_warm: ratioOf(now.warm, before.warm) } : {}),
    machine: { cpus: cpus().length, cpu: cpus()[0].model, chromium: chromiumVersion,
               chromium_args: CHROMIUM_ARGS, node: process.version, settle_ms: SETTLE_MS,
               loadavg_1m_start: Number(loadavgStart.toFixed(2)),
               loadavg_1m_end: Number(loadavg()[0].toFixed(2)) },
  };
  const med = (runs, f) => median(runs.map(f));
  // A mark's median, or nothing when the page does not set it (the pages differ in their marks).
  const markText = (runs, key, what) => {
    const v = med(runs, (r) => r[key]);
    return v === null || v === undefined ? [] : [`${what} ${v}`];
  };
  const renderLines = (name, what, runs) => {
    const s = summary(runs);
    return [
      `  ${name} first complete render (${what}): median ${s.median_ms} ms, max ${s.max_ms} ms ` +
        `(${runs.length} loads: ${runs.map((r) => r.first_render_ms).join(", ")} ms; load average ` +
        `${runs.map((r) => r.loadavg_1m.toFixed(1)).join(", ")})`,
      `    medians (ms): ${[
        ...markText(runs, "module_start_ms", "module runs"), ...markText(runs, "data_ms", "data here"),
        ...markText(runs, "sources_ms", "the diff's sources here"),
        ...markText(runs, "text_panels_ms", "panels without Plotly drawn"),
        ...markText(runs, "plotly_ms", "Plotly has run"),
        ...markText(runs, "plots_ms", "Plotly panels drawn"),
        ...markText(runs, "landscape_start_ms", "their frame painted"),
        ...markText(runs, "drawn_ms", "every panel drawn")].join(", ")}, painted (complete) ` +
        `${s.median_ms}${med(runs, (r) => r.plotly_bytes_transferred) === null ? "; no Plotly loaded"
          : `; Plotly bytes transferred ${med(runs, (r) => r.plotly_bytes_transferred)}`}`,
      `    panels drawn (ms, medians): ` +
        Object.keys(runs[0].panels_ms).map((k) => `${k} ${med(runs, (r) => r.panels_ms[k] ?? 0)}`).join(", ") +
        `; the server's CPU (median) ${med(runs, (r) => r.server_cpu_ms)} ms`,
    ];
  };
  const lines = [
    `dashboard on a 500-attempt session (${result.machine.cpu}, ${result.machine.cpus} CPUs, ${chromiumVersion}, ${CHROMIUM_ARGS.join(" ")})`,
    ...routes.map((r) => `  ${r.route.padEnd(40)} median ${r.median_ms.toFixed(1)} ms, max ${r.max_ms.toFixed(1)} ms, ${r.bytes} bytes`),
    ...renderLines("cold", `a fresh profile: the first opening, ${SETTLE_MS} ms after chromium's launch; ` +
                   "the 1 s limit", now.cold),
    ...renderLines("warm", "the same profile opening the page again", now.warm),
    ...(before ? [
      `  side by side, loads alternating: before = ${before.bin} with OPENKERNEL_HOME=${before.home}`,
      ...renderLines("before: cold", "a fresh profile", before.cold),
      ...renderLines("before: warm", "the same profile again", before.warm),
      `  now / before, medians of the same run: cold ${result.ratio_cold.toFixed(2)}, ` +
        `warm ${result.ratio_warm.toFixed(2)}`,
      `  paired, cold (round by round): now faster in ${result.paired_cold.now_faster} of ` +
        `${result.paired_cold.rounds} rounds, median difference ${result.paired_cold.median_diff_ms} ms ` +
        `(now - before), sign test p = ${result.paired_cold.sign_test_p.toFixed(3)}`] : []),
    ...pages.flatMap((p) => p.traces.flatMap((t, i) => traceLines(`${p.name}: traced cold load ${i + 1}`, t))),
    `  machine load (1-minute average) ${loadavgStart.toFixed(2)} at the start, ` +
      `${loadavg()[0].toFixed(2)} at the end, on ${cpus().length} CPUs`,
  ];
  console.log(lines.join("\n"));
  if (out) {
    writeFileSync(`${out}.json`, `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(`${out}.txt`, `${lines.join("\n")}\n`);
  }
  const slow = routes.filter((r) => r.max_ms >= API_LIMIT_MS);
  if (slow.length || result.cold.max_ms >= RENDER_LIMIT_MS) {
    console.error("a limit was missed");
    process.exit(1);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
