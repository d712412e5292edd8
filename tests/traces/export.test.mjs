// `openkernel traces export` end to end, read back by an independent Parquet reader (hyparquet):
// the committed H200 and CPU stores (bench/results/landscapes) and a CPU sweep run here export
// one raw row per attempt of the store; bad input exits 2 with a clear message and leaves nothing.
// Run by ctest (label integration): OPENKERNEL_BIN names the binary, OPENKERNEL_PYTHON the worker's
// Python; the store's counts come from the sqlite3 shell (scripts/setup.sh installs it).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import {
  existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

import { readParquet } from "./read_parquet.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = process.env.OPENKERNEL_BIN;
const PYTHON = process.env.OPENKERNEL_PYTHON || "/usr/bin/python3";
const TMP = mkdtempSync(join(tmpdir(), "ok-traces-"));
after(() => rmSync(TMP, { recursive: true, force: true }));

function env() {
  return { ...process.env, OPENKERNEL_PYTHON: PYTHON, XDG_CONFIG_HOME: join(TMP, "config"),
           XDG_CACHE_HOME: join(TMP, "cache"), XDG_DATA_HOME: join(TMP, "data") };
}

function openkernel(...args) {
  assert.ok(BIN, "OPENKERNEL_BIN names the openkernel binary (ctest sets it)");
  return spawnSync(BIN, args, { env: env(), encoding: "utf8", cwd: TMP, timeout: 600_000 });
}

function sql(db, query) {
  return execFileSync("sqlite3", [db, query], { encoding: "utf8" }).trim();
}

// The files under `dir`, relative, sorted.
function files(dir) {
  return readdirSync(dir, { recursive: true }).map(String)
    .filter((f) => statSync(join(dir, f)).isFile()).sort();
}

// Exports `db` as Parquet into a fresh folder and reads every raw file back.
async function exportAndRead(db, name) {
  const out = join(TMP, name);
  const p = openkernel("traces", "export", "--out", out, "--db", db);
  assert.equal(p.status, 0, p.stderr);
  const raw = files(out).filter((f) => f.startsWith("raw/") && f.endsWith(".parquet"));
  const rows = [];
  for (const f of raw) {
    const t = await readParquet(join(out, f));
    assert.equal(t.metadata.key_value_metadata.find((kv) => kv.key === "openkernel.table").value, "raw");
    rows.push(...t.rows);
  }
  const stats = JSON.parse(readFileSync(join(out, "metadata/stats.json"), "utf8"));
  const pairs = await readParquet(join(out, "processed/training_pairs_v1.parquet"));
  return { out, raw, rows, stats, pairs };
}

test("the committed landscape stores export one row per attempt", async () => {
  const dir = join(ROOT, "bench/results/landscapes");
  const stores = readdirSync(dir).filter((f) => f.endsWith(".db.gz")).sort();
  assert.ok(stores.length >= 4, `stores in ${dir}`);
  for (const gz of stores) {
    const db = join(TMP, gz.replace(/\.gz$/, ""));
    writeFileSync(db, gunzipSync(readFileSync(join(dir, gz))));
    const attempts = Number(sql(db, "SELECT COUNT(*) FROM attempts"));
    const sessions = Number(sql(db, "SELECT COUNT(DISTINCT session) FROM attempts"));
    const got = await exportAndRead(db, `x-${gz}`);
    assert.equal(got.rows.length, attempts, gz);
    assert.equal(got.raw.length, sessions, gz);
    assert.equal(got.stats.attempts_in_store, attempts, gz);
    const correct = Number(sql(db, "SELECT COUNT(*) FROM attempts WHERE correct = 1"));
    assert.equal(got.rows.filter((r) => r.correct).length, correct, gz);
    // Every attempt with code has a training pair (builtin sessions: synthesized prompts).
    assert.equal(got.pairs.rows.length, got.rows.filter((r) => r.code !== null).length, gz);
    for (const p of got.pairs.rows) {
      assert.equal(p.messages.at(-1).role, "assistant");
      assert.equal(p.prompt_source, "synthesized");
    }
    if (gz.startsWith("h200")) {
      assert.ok(got.rows.every((r) => r.benchmark === "KernelBench" && r.benchmark_id.startsWith("level1/")), gz);
      assert.ok(got.rows.some((r) => r.roofline_fraction !== null), gz);
    }
  }
});

test("a CPU sweep's sessions export like any other", async () => {
  const db = join(TMP, "sweep.db");
  const p = openkernel("sweep", "--db", db, "--level", "1", "--problems", "3", "--iterations", "2",
                       "--backend", "cpu", "--model", "builtin", "--trials", "2",
                       "--timing-budget", "0.3", "--timeout", "120", "--kernelbench-dir",
                       join(ROOT, "tests/integration/fixtures/minibench"), "--output",
                       join(TMP, "sweep.tsv"));
  assert.equal(p.status, 0, p.stderr);
  const attempts = Number(sql(db, "SELECT COUNT(*) FROM attempts"));
  assert.ok(attempts >= 1);
  const got = await exportAndRead(db, "x-sweep");
  assert.equal(got.rows.length, attempts);
  for (const r of got.rows) {
    assert.equal(r.benchmark_id, "level1/3_SwishChain");
    assert.equal(r.backend, "cpu");
    assert.ok(typeof r.hardware === "string" && r.hardware.length > 0);  // the CPU's name
    assert.ok(r.torch_version);
    assert.ok([-1, 0].includes(r.reward) || r.reward === null || (r.reward >= -1 && r.reward <= 3));
  }
  // JSON lines hold the same rows.
  const out = join(TMP, "x-sweep-jsonl");
  assert.equal(openkernel("traces", "export", "--out", out, "--db", db, "--format", "jsonl").status, 0);
  const lines = files(out).filter((f) => f.startsWith("raw/"))
    .flatMap((f) => readFileSync(join(out, f), "utf8").trim().split("\n"));
  assert.equal(lines.length, attempts);
});

test("bad input exits 2 with a clear message and leaves nothing", () => {
  const good = join(TMP, "good.db");
  writeFileSync(good, gunzipSync(readFileSync(join(ROOT, "bench/results/landscapes/h200_level1_36.db.gz"))));
  const cases = [
    [["--db", good, "--format", "csv"], "unknown --format csv"],
    [["--db", good, "--since", "yesterday"], "YYYY-MM-DD"],
    [["--db", join(TMP, "none.db")], "no store at"],
    [["--db", good, "--level", "7"], "passes the filters"],
  ];
  const corrupt = join(TMP, "corrupt.db");
  writeFileSync(corrupt, "this is not a database, just some text ".repeat(200));
  cases.push([["--db", corrupt], "cannot read the store"]);
  const empty = join(TMP, "empty.db");
  writeFileSync(empty, "");
  cases.push([["--db", empty], "holds no attempts"]);
  writeFileSync(join(TMP, "plain-file"), "x");
  cases.push([["--db", good, "--out", join(TMP, "plain-file", "ds")], "cannot write the export"]);
  mkdirSync(join(TMP, "mine"));
  writeFileSync(join(TMP, "mine", "notes.txt"), "keep");
  cases.push([["--db", good, "--out", join(TMP, "mine")], "not an earlier trace export"]);
  for (const [args, message] of cases) {
    const out = args.includes("--out") ? [] : ["--out", join(TMP, "bad-out")];
    const p = openkernel("traces", "export", ...out, ...args);
    assert.equal(p.status, 2, `${args.join(" ")}: ${p.stderr}`);
    assert.match(p.stderr, /^openkernel: error: /);
    assert.ok(p.stderr.includes(message), `${args.join(" ")}: ${p.stderr}`);
  }
  assert.ok(!existsSync(join(TMP, "bad-out")));
  assert.deepEqual(readdirSync(join(TMP, "mine")), ["notes.txt"]);
  assert.deepEqual(readdirSync(TMP).filter((f) => f.includes("partial")), []);
});
