// Shared set-up of the hub tests: the loopback Hub (hub_test_server) on a free port, the
// openkernel binary run with a sentinel token, temporary folders, and the official client's
// connection options. Skips, saying why, without the built binaries or node_modules.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { after, before } from "node:test";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = process.env.OPENKERNEL_BIN_DIR || join(ROOT, "build/release/bin");
// Never a real token: the no-token-on-disk test greps every file for it.
export const TOKEN = "hf_SENTINELtoken0123456789abcdefXYZ";
export const READ_TOKEN = "hf_SENTINELreadonly0123456789abc";

export function missing() {
  for (const b of ["openkernel", "hub_test_server"])
    if (!existsSync(join(BIN, b))) return `no ${b} in ${BIN} (build it first)`;
  if (!existsSync(join(ROOT, "node_modules/@huggingface/hub")))
    return "no node_modules/@huggingface/hub (scripts/setup.sh runs npm ci)";
  return null;
}

// Starts the server; resolves to {url, root, stop(), fail(status, count, match), log()}.
export async function startHub() {
  const root = mkdtempSync(join(tmpdir(), "ok-hub-root-"));
  const p = spawn(join(BIN, "hub_test_server"),
                  ["--root", root, "--write-token", TOKEN, "--read-token", READ_TOKEN],
                  { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise((ok, bad) => {
    let out = "";
    p.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/port (\d+)/);
      if (m) ok(Number(m[1]));
    });
    p.on("exit", (code) => bad(new Error(`hub_test_server exited ${code}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url, root,
    stop: () => p.kill(),
    fail: async (status, count, match) => {
      await fetch(`${url}/_test/fail`, { method: "POST", body: JSON.stringify({ status, count, match }) });
    },
    log: async () => (await fetch(`${url}/_test/log`)).json(),
  };
}

export function tempDir(name) {
  return mkdtempSync(join(tmpdir(), `ok-hub-${name}-`));
}

// Runs a program without blocking node's event loop (a blocked loop misses the server closing
// idle pooled connections, and the official client's next request fails on a dead socket).
export function runAsync(cmd, args, env, timeoutMs = 120000) {
  return new Promise((ok) => {
    const p = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout.on("data", (d) => { out += d; });
    p.stderr.on("data", (d) => { err += d; });
    const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.on("close", (code) => { clearTimeout(timer); ok({ code, out, err }); });
  });
}

// Runs openkernel with the Hub's endpoint and a token (HF_TOKEN unless `token` is null).
export async function openkernel(hub, args, { token = TOKEN, env = {} } = {}) {
  const home = tempDir("hfhome");
  const e = { ...process.env, HF_ENDPOINT: hub.url, HF_HOME: home, ...env };
  delete e.HF_TOKEN;
  if (token !== null) e.HF_TOKEN = token;
  return { ...(await runAsync(join(BIN, "openkernel"), args, e)), home };
}

export function client(hub, token = TOKEN) {
  return { hubUrl: hub.url, accessToken: token };
}

// Every file under `dir` (symlinks not followed).
export function allFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...allFiles(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

export function filesContaining(dirs, needle) {
  const hits = [];
  for (const d of dirs)
    if (existsSync(d))
      for (const f of allFiles(d))
        if (statSync(f).size < 512 * 1024 * 1024 && readFileSync(f).includes(needle)) hits.push(f);
  return hits;
}

// Deterministic bytes with NUL bytes in the first 512 (binary: the Hub sends them through LFS).
export function binaryBytes(n, seed = 7) {
  const b = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = i % 97 === 0 ? 0 : x >>> 24;
  }
  return b;
}

// One test file's set-up: the loopback Hub started before its tests and stopped after, the
// official client (null when skipped), and `temp`/`run` that record every folder a test wrote
// in `dirs`, for the no-token-on-disk check.
export async function hubSuite() {
  const skip = missing() || false;
  const suite = { skip, hf: skip ? null : await import("@huggingface/hub"), hub: null, dirs: [] };
  suite.temp = (name) => { const d = tempDir(name); suite.dirs.push(d); return d; };
  suite.run = async (args, opts) => {
    const r = await openkernel(suite.hub, args, opts);
    suite.dirs.push(r.home);
    return r;
  };
  before(async () => { if (!skip) { suite.hub = await startHub(); suite.dirs.push(suite.hub.root); } });
  after(() => suite.hub?.stop());
  return suite;
}
