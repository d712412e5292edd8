// The C++ Parquet writer (src/traces/parquet.*) against an independent reader (hyparquet): the
// fixture program writes rows through traces::write_parquet and the same rows as JSON lines; every
// value must come back equal, nulls, empty lists, lists of structs and long strings included.
// Run by ctest (label unit): PARQUET_FIXTURE names the built fixture program.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { readParquet } from "./read_parquet.mjs";

const FIXTURE = process.env.PARQUET_FIXTURE;

// The writer's input with every column present (a missing key is a null).
function expected(row, names) {
  return Object.fromEntries(names.map((n) => [n, row[n] === undefined ? null : row[n]]));
}

test("what the C++ writer wrote reads back equal in hyparquet", async () => {
  assert.ok(FIXTURE, "PARQUET_FIXTURE names the fixture program (ctest sets it)");
  const dir = mkdtempSync(join(tmpdir(), "ok-parquet-"));
  try {
    const pq = join(dir, "f.parquet");
    const jl = join(dir, "f.jsonl");
    execFileSync(FIXTURE, [pq, jl]);
    const want = readFileSync(jl, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    const got = await readParquet(pq);
    assert.equal(Number(got.metadata.num_rows), 2500);
    assert.equal(got.metadata.row_groups.length, 3);
    assert.deepEqual(got.metadata.key_value_metadata, [{ key: "fixture", value: "1" }]);
    assert.deepEqual(got.names, ["id", "name", "big", "score", "ok", "tags", "messages", "info"]);
    const byName = Object.fromEntries(got.schema.children.map((c) => [c.element.name, c.element]));
    assert.equal(byName.id.repetition_type, "REQUIRED");
    assert.equal(byName.name.repetition_type, "OPTIONAL");
    assert.equal(byName.messages.converted_type, "LIST");
    assert.equal(got.rows.length, want.length);
    for (let i = 0; i < want.length; ++i)
      assert.deepEqual(got.rows[i], expected(want[i], got.names), `row ${i}`);
    // The cases the fixture plants, checked by name so a change of the fixture cannot hide them.
    assert.equal(got.rows[5].name.length, 70004);
    assert.equal(got.rows[9].messages.at(-1).content.length, 200003);
    assert.deepEqual(got.rows[1].tags, []);
    assert.deepEqual(got.rows[2].messages, []);
    assert.equal(got.rows[0].messages, null);
    assert.equal(got.rows[0].name, null);
    assert.deepEqual(got.rows[3].info, { a: null, b: "only b" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
