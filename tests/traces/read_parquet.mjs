// Reads Parquet files with hyparquet (pure JavaScript, pinned in package-lock.json): the
// independent reader the trace export's tests check the C++ writer against. Values come back as
// plain JSON values: int64 as Number when exact (else a decimal string), a missing (null) list or
// struct as null.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from "hyparquet";

export function plain(v) {
  if (v === undefined || v === null) return null;
  if (typeof v === "bigint") return BigInt(Number(v)) === v ? Number(v) : v.toString();
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = plain(x);
    return out;
  }
  return v;
}

// {metadata, schema (hyparquet's schema tree), rows (plain objects, every column present)}.
export async function readParquet(path) {
  const file = await asyncBufferFromFile(path);
  const metadata = await parquetMetadataAsync(file);
  const schema = parquetSchema(metadata);
  const names = schema.children.map((c) => c.element.name);
  const raw = await parquetReadObjects({ file, rowFormat: "object" });
  const rows = raw.map((r) => Object.fromEntries(names.map((n) => [n, plain(r[n])])));
  return { metadata, schema, rows, names };
}
