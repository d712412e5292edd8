// The dashboard on a 500-attempt session: how long each API route takes to answer (limit 200 ms)
// and how long chromium takes from navigation to the page's first complete render, every panel
// drawn (limit 1 s). The session is synthesised through the store API (dashboard_synth, built
// with the release preset), with a second, 100-attempt session of a priced model so the panels
// across sessions have two to compare.
//
//   node bench/dashboard_bench.mjs [--out bench/results/cpu_dashboard_500]
// Writes OUT.json and OUT.txt; exits 1 when a limit is missed.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BIN = process.env.OPENKERNEL_BIN_DIR || join(ROOT, "build/release/bin");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const out = process.argv.includes("--out")
  ? resolve(process.argv[process.argv.indexOf("--out") + 1]) : null;
const API_LIMIT_MS = 200, RENDER_LIMIT_MS = 1000, REPEATS = 20, RENDERS = 5;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

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

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), "ok-dashboard-bench-"));
  const db = join(tmp, "db.sqlite");
  synth(db, ["--session", "big", "--attempts", "500"]);
  synth(db, ["--session", "priced", "--attempts", "100", "--model", "synthetic/priced-model",
             "--cost-per-attempt", "0.02", "--seed", "2"]);
  const dash = spawn(join(BIN, "kernel-code"), ["dashboard", "--db", db, "--port", "0"],
                     { stdio: ["ignore", "pipe", "inherit"] });
  let text = "";
  const url = await new Promise((ok, fail) => {
    dash.stdout.on("data", (d) => {
      text += d;
      const m = text.match(/http:\/\/\S+/);
      if (m) ok(m[0]);
    });
    dash.on("exit", (c) => fail(new Error(`the dashboard exited with ${c}`)));
  });
  const routes = [];
  for (const path of ["/api/sessions", "/api/sessions/big", "/api/sessions/big/intents",
                      "/api/sessions/big/events?after=0", "/api/sessions/big/attempts/250/source",
                      "/api/strategies", "/api/aggregates", "/api/charts"]) {
    routes.push(await timeRoute(url, path));
  }
  const require = createRequire(import.meta.url);
  const { chromium } = require(join(ROOT, "node_modules/playwright-core"));
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
                                          args: ["--no-sandbox", "--use-gl=swiftshader", "--enable-unsafe-swiftshader"] });
  const renders = [], breakdown = [];
  let coldMs = null;
  for (let i = 0; i <= RENDERS; i++) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(`${url}?session=big`);
    await page.waitForFunction(() => document.body.dataset.ready === "1", null, { timeout: 30_000 });
    const ms = await page.evaluate(() => window.okDashboard.firstRenderMs);
    const parts = await page.evaluate(() => ({ scripts_ms: window.okDashboard.moduleStartMs,
                                               panels_ms: window.okDashboard.renderMs }));
    const states = await page.$$eval(".panel[data-state]", (ps) => ps.map((p) => p.dataset.state));
    if (states.filter((s) => s === "ready").length < 10) throw new Error(`panels: ${states}`);
    if (i > 0) {  // the first load warms chromium's caches
      renders.push(ms);
      breakdown.push(parts);
    } else {
      coldMs = ms;
    }
    await page.close();
  }
  await browser.close();
  dash.kill("SIGTERM");
  rmSync(tmp, { recursive: true, force: true });
  const chromiumVersion = spawnSync(CHROMIUM, ["--version"], { encoding: "utf8" }).stdout.trim();
  const result = {
    attempts: 500, api_limit_ms: API_LIMIT_MS, render_limit_ms: RENDER_LIMIT_MS,
    routes, first_render_ms: { median: median(renders), max: Math.max(...renders), runs: renders,
                               first_load: coldMs, breakdown },
    machine: { cpus: cpus().length, cpu: cpus()[0].model, chromium: chromiumVersion,
               node: process.version, loadavg_1m: loadavg()[0] },
  };
  const slow = routes.filter((r) => r.max_ms >= API_LIMIT_MS);
  const lines = [
    `dashboard on a 500-attempt session (${result.machine.cpu}, ${result.machine.cpus} CPUs, ${chromiumVersion})`,
    ...routes.map((r) => `  ${r.route.padEnd(40)} median ${r.median_ms.toFixed(1)} ms, max ${r.max_ms.toFixed(1)} ms, ${r.bytes} bytes`),
    `  first complete render: median ${median(renders).toFixed(0)} ms, max ${Math.max(...renders).toFixed(0)} ms (${RENDERS} loads; the first load ${coldMs.toFixed(0)} ms)`,
    `  of which scripts loaded (Plotly evaluated): median ${median(breakdown.map((b) => b.scripts_ms)).toFixed(0)} ms; panels drawn: ` +
      Object.keys(breakdown[0].panels_ms).map((k) => `${k} ${median(breakdown.map((b) => b.panels_ms[k]))}`).join(", ") + " ms",
    `  machine load (1-minute average) ${loadavg()[0].toFixed(2)} on ${cpus().length} CPUs`,
  ];
  console.log(lines.join("\n"));
  if (out) {
    writeFileSync(`${out}.json`, `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(`${out}.txt`, `${lines.join("\n")}\n`);
  }
  if (slow.length || Math.max(...renders) >= RENDER_LIMIT_MS) {
    console.error("a limit was missed");
    process.exit(1);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
