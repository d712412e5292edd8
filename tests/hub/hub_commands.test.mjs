// `openkernel hub` against a Hub that refuses or fails (the loopback Hub, told to): 401 for a
// bad or missing token, 403 for a read-only token, 404, 429 and 5xx retried and then exit 3;
// the token file the official tools use; `push kernels` / `pull kernels` over a real CPU session
// of `openkernel optimize` with the builtin generator; `push skills` / `pull skills` (a file
// that is not a skills export, or not JSON, leaves the store unchanged);
// and no token in any file the run wrote.
//
//   node --test tests/hub/hub_commands.test.mjs
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { BIN, binaryBytes, client, filesContaining, hubSuite, READ_TOKEN, ROOT, runAsync, tempDir,
         TOKEN } from "./support.mjs";

const suite = await hubSuite();
const { skip, hf, dirs, temp, run } = suite;

function resultsFile() {
  const d = temp("results");
  writeFileSync(join(d, "level1.tsv"), "problem\tspeedup\n1_x\t1.5\n");
  return join(d, "level1.tsv");
}

test("a bad token: 401, exit 3, the token not echoed", { skip }, async () => {
  const r = await run(["hub", "push", "results", resultsFile(), "--repo", "e-org/r"], { token: "hf_SENTINELwrong000" });
  assert.equal(r.code, 3, r.err);
  assert.match(r.err, /refused the token from HF_TOKEN \(401 Unauthorized/);
  assert.ok(!r.err.includes("hf_SENTINELwrong000") && !r.out.includes("hf_SENTINELwrong000"));
});

test("no token: pushing says how to set one", { skip }, async () => {
  const r = await run(["hub", "push", "results", resultsFile(), "--repo", "e-org/r"], { token: null });
  assert.equal(r.code, 3, r.err);
  assert.match(r.err, /needs a token with write access: set HF_TOKEN/);
});

test("a read-only token: 403, exit 3", { skip }, async () => {
  const r = await run(["hub", "push", "results", resultsFile(), "--repo", "e-org/r"], { token: READ_TOKEN });
  assert.equal(r.code, 3, r.err);
  assert.match(r.err, /forbidden \(403/);
});

test("the token file of the official tools (HF_TOKEN_PATH) is read", { skip }, async () => {
  const d = tempDir("tokenfile");  // holds the token on purpose: not in `dirs`
  writeFileSync(join(d, "token"), `${TOKEN}\n`);
  const r = await run(["hub", "push", "results", resultsFile(), "--repo", "e-org/r"],
                { token: null, env: { HF_TOKEN_PATH: join(d, "token") } });
  assert.equal(r.code, 0, r.err);
  const card = await hf.downloadFile({ repo: { type: "dataset", name: "e-org/r" }, path: "README.md", ...client(suite.hub) });
  assert.match(await card.text(), /- config_name: level1\n  default: true\n  data_files:\n  - split: train\n    path:\n    - "level1\.tsv"/);
});

test("a missing repository: 404, exit 3", { skip }, async () => {
  const r = await run(["hub", "pull", "results", "--repo", "e-org/nothing", "--out", temp("none")]);
  assert.equal(r.code, 3, r.err);
  assert.match(r.err, /not found \(404/);
});

test("429 on every attempt: retried, then exit 3", { skip }, async () => {
  await suite.hub.fail(429, 100, "/api/datasets/e-org/limited/preupload");
  const r = await run(["hub", "push", "results", resultsFile(), "--repo", "e-org/limited", "--retries", "2"]);
  assert.equal(r.code, 3, r.err);
  assert.match(r.err, /429 Too Many Requests after 3 attempts/);
  const tries = (await suite.hub.log()).filter((l) => l.includes("/e-org/limited/preupload"));
  assert.equal(tries.length, 3);
});

test("5xx twice, then success: the LFS upload is retried", { skip }, async () => {
  await suite.hub.fail(503, 2, "/_lfs/dataset/e-org/flaky/");
  const d = temp("flaky");
  writeFileSync(join(d, "data.parquet"), binaryBytes(50_000));
  const r = await run(["hub", "push", "traces", "--from", d, "--repo", "e-org/flaky"]);
  assert.equal(r.code, 0, r.err);
  const puts = (await suite.hub.log()).filter((l) => l.startsWith("PUT /_lfs/dataset/e-org/flaky/"));
  assert.equal(puts.length, 3);
});

test("5xx on every download: exit 3", { skip }, async () => {
  await suite.hub.fail(500, 100, "/datasets/e-org/flaky/resolve/");
  const r = await run(["hub", "pull", "traces", "--repo", "e-org/flaky", "--out", temp("x"), "--retries", "1"]);
  assert.equal(r.code, 3, r.err);
  assert.match(r.err, /kept failing \(HTTP 500\) after 2 attempts/);
});

test("bad input: exit 2", { skip }, async () => {
  assert.equal((await run(["hub", "push", "traces", "--repo", "bad name", "--from", "."])).code, 2);
  assert.equal((await run(["hub", "push", "traces", "--repo", "o/n", "--from", "/nonexistent"])).code, 2);
  assert.equal((await run(["hub", "push", "skills", "--repo", "o/n"])).code, 2);
  assert.equal((await run(["hub", "pull", "kernels", "--repo", "o/n"])).code, 2);
});

test("push kernels from a real session, pull one back", { skip, timeout: 600_000 }, async () => {
  const d = temp("session");
  const db = join(d, "store.db");
  const opt = await runAsync(join(BIN, "openkernel"), ["optimize", "--db", db, "--iterations", "2",
    "--out", join(d, "out"), "--trials", "2", "--timing-budget", "0.3", "--timeout", "120",
    "--backend", "cpu", "--model", "builtin", "--reference", join(ROOT, "examples/swish_chain/reference.py")],
    { ...process.env, OPENKERNEL_PYTHON: process.env.OPENKERNEL_PYTHON || "/usr/bin/python3" }, 540_000);
  assert.equal(opt.code, 0, opt.err);
  const report = JSON.parse(readFileSync(join(d, "out/report.json"), "utf8"));
  assert.ok(report.best_candidate, "the session found a correct kernel");
  const problem = report.problem.name;

  const r = await run(["hub", "push", "kernels", "--db", db, "--repo", "k-org/kernels"]);
  assert.equal(r.code, 0, r.err);
  const repo = { type: "model", name: "k-org/kernels" };
  const card = await (await hf.downloadFile({ repo, path: "README.md", ...client(suite.hub) })).text();
  assert.ok(card.includes(`| [${problem}](`), card);
  assert.ok(card.includes(`${report.speedup.toFixed(2)}x`), card);

  const out = temp("pulled");
  const p = await run(["hub", "pull", "kernels", "--repo", "k-org/kernels", "--problem", problem, "--out", out]);
  assert.equal(p.code, 0, p.err);
  const kernel = readdirSync(join(out, problem)).find((f) => f.endsWith(".py"));
  assert.equal(readFileSync(join(out, problem, kernel), "utf8"), readFileSync(report.best_candidate, "utf8"));
  assert.ok(readdirSync(join(out, problem)).includes("report.json"));

  // The same session as a training dataset: `traces export` then `hub push traces`, read back by
  // the official client with the card's configs naming the export's tables.
  const traces = join(d, "traces");
  const x = await run(["traces", "export", "--out", traces, "--db", db]);
  assert.equal(x.code, 0, x.err);
  const t = await run(["hub", "push", "traces", "--from", traces, "--repo", "t-org/traces"]);
  assert.equal(t.code, 0, t.err);
  const trepo = { type: "dataset", name: "t-org/traces" };
  const names = [];
  for await (const f of hf.listFiles({ repo: trepo, recursive: true, ...client(suite.hub) }))
    if (f.type === "file") names.push(f.path);
  assert.ok(names.includes("processed/training_pairs_v1.parquet"), names.join(" "));
  assert.ok(names.includes("metadata/stats.json") && names.some((n) => n.startsWith("raw/")), names.join(" "));
  const stats = JSON.parse(await (await hf.downloadFile({ repo: trepo, path: "metadata/stats.json", ...client(suite.hub) })).text());
  assert.deepEqual(stats, JSON.parse(readFileSync(join(traces, "metadata/stats.json"), "utf8")));
  const tcard = await (await hf.downloadFile({ repo: trepo, path: "README.md", ...client(suite.hub) })).text();
  assert.match(tcard, /config_name: training_pairs_v1\n  default: true/);
  dirs.push(d);
});

test("skills: a store's library exported, pushed, pulled and merged into another store", { skip }, async () => {
  const d = temp("skills");
  const file = join(d, "skills.json");
  // A fresh store's library: the seed skills (one per builtin kernel template).
  const e = await run(["skills", "export", "--out", file, "--db", join(d, "a.db")]);
  assert.equal(e.code, 0, e.err);
  const exported = JSON.parse(readFileSync(file, "utf8"));
  assert.ok(exported.skills.length > 0);
  const r = await run(["hub", "push", "skills", "--from", file, "--repo", "s-org/skills"]);
  assert.equal(r.code, 0, r.err);
  const out = temp("skills-out");
  // The pulling store in a folder of its own (a store left in /tmp by an earlier run was merged into).
  const db = join(temp("skills-db"), "b.db");
  const p = await run(["hub", "pull", "skills", "--repo", "s-org/skills", "--out", out, "--db", db]);
  assert.equal(p.code, 0, p.err);
  assert.equal(readFileSync(join(out, "skills.json"), "utf8"), readFileSync(file, "utf8"));
  assert.match(p.err, new RegExp(`merged ${exported.skills.length} skills from \\S+skills\\.json into the store`));
  const listed = JSON.parse((await run(["skills", "list", "--json", "--db", db])).out);
  const ids = (x) => x.map((s) => s.id).sort();
  assert.deepEqual(ids(listed.skills ?? listed), ids(exported.skills));
  // A file that is not a skills export: exit 2, nothing merged.
  writeFileSync(join(d, "bad.json"), '{"format":"openkernel-skills","version":99,"skills":[]}\n');
  await run(["hub", "push", "skills", "--from", join(d, "bad.json"), "--repo", "s-org/bad"]);
  const bad = await run(["hub", "pull", "skills", "--repo", "s-org/bad", "--out", temp("bad-out"), "--db", join(d, "c.db")]);
  assert.equal(bad.code, 2, bad.err);
  assert.match(bad.err, /bad\.json: /);
});

test("skills: a pulled file that is not JSON: exit 2, the store unchanged", { skip }, async () => {
  const d = temp("skills-notjson");
  const db = join(d, "store.db");
  // The store's library (its seed skills), exported before and after the pull.
  const library = async (name) => {
    const e = await run(["skills", "export", "--out", join(d, name), "--db", db]);
    assert.equal(e.code, 0, e.err);
    return JSON.parse(readFileSync(join(d, name), "utf8")).skills;
  };
  const before = await library("before.json");
  assert.ok(before.length > 0);
  writeFileSync(join(d, "skills.json"), "openkernel-skills, version 1: {not json\n");
  const r = await run(["hub", "push", "skills", "--from", join(d, "skills.json"), "--repo", "s-org/notjson"]);
  assert.equal(r.code, 0, r.err);
  const out = temp("notjson-out");
  const p = await run(["hub", "pull", "skills", "--repo", "s-org/notjson", "--out", out, "--db", db]);
  assert.equal(p.code, 2, p.err);
  assert.match(p.err, /skills\.json is not JSON: not merged/);
  assert.doesNotMatch(p.err, /merged \d+ skills/);
  assert.deepEqual(await library("after.json"), before);
});

test("the token is written nowhere", { skip }, async () => {
  assert.deepEqual(filesContaining(dirs, TOKEN), []);
  assert.deepEqual(filesContaining(dirs, READ_TOKEN), []);
});
