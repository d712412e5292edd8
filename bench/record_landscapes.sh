#!/usr/bin/env bash
# Records measured search landscapes: every point of a sub-space of the builtin generator's
# template space evaluated once, for real, per problem, into one store (sessions
# land-<backend>-L1_<id>), for bench/search_replay and bench/skills_ablation.
#
#   bench/record_landscapes.sh BACKEND PROBLEMS.tsv AXES.json OUT_DIR
#
# PROBLEMS.tsv: KernelBench level-1 problem ids with their --set overrides per backend kind
# (bench/gemm_landscapes.tsv: column 2 for cpu, column 3 for triton and cuda, "-" for none).
# AXES.json: {"<template id>": {param: [values in the template's prior order]}} (bench/
# landscape_axes/): the sub-space. The run reads the templates from a copy of the resource root
# (OUT_DIR/root: python/ and data/, with those templates' params replaced), so the points are the
# template's own, in the proposer's order over the sub-space; nothing in the repository changes.
#
# Each problem is `openkernel optimize --search prior --no-skills --stop-at-sol 2` with enough
# iterations for its whole sub-space (--no-skills: the library must not reorder what is recorded,
# as the replay reads the recorded order as the proposer's). Resumable: a problem whose session
# ended exhausted (every point measured) is skipped, any other continues with `optimize --resume`
# (its measured points are kept and not measured again), so the recording can run in slices:
#   SLICE_S   seconds this invocation may run (default: no limit). A slice gives each session as
#             many more iterations as fit in what is left (at the mean wall time of the store's
#             evaluations so far, EVAL_S before the first; START_S, default 40, for a session's
#             start), so it ends between evaluations: an evaluation cut short would be recorded
#             `not_evaluated` and, as a resume does not repeat an issued point, lost to the
#             landscape. A session still running 120 s past the slice is interrupted (SIGINT).
#   NICE      niceness of the evaluations (default 10), one at a time.
#   TRIALS (default 2), TIMING_BUDGET (default 0.5), THREADS (default 1 on cpu, unset on a GPU),
#   EVAL_S (default 15), ONLY (space-separated problem ids: just those).
# Environment: OPENKERNEL_BIN, OPENKERNEL_KERNELBENCH_DIR, PYTHON (default /usr/bin/python3 when
# it exists, else python3). Writes OUT_DIR/bench.db, OUT_DIR/record.log, OUT_DIR/L1_<id>/ (each
# session's outputs) and prints one line per problem and the slice's CPU time. Exit 0 (some
# problems may be left for the next slice: "left" lines), 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
usage() { echo "record_landscapes: $1" >&2; echo "usage: bench/record_landscapes.sh cpu|triton|cuda PROBLEMS.tsv AXES.json OUT_DIR" >&2; exit 2; }
[ $# -eq 4 ] || usage "four arguments"
backend=$1 problems=$2 axes=$3 out=$4
case "$backend" in cpu|triton|cuda) ;; *) usage "backend cpu, triton or cuda" ;; esac
[ -f "$problems" ] || usage "no problems file $problems"
[ -f "$axes" ] || usage "no axes file $axes"
BIN=${OPENKERNEL_BIN:-$repo/build/release/bin/openkernel}
KB=${OPENKERNEL_KERNELBENCH_DIR:-$repo/../shared/kernelbench}
PY=${PYTHON:-$([ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)}
[ -x "$BIN" ] || usage "no $BIN (build first: cmake --build build/release)"
[ -d "$KB/level1" ] || usage "no KernelBench at $KB (set OPENKERNEL_KERNELBENCH_DIR)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
db="$out/bench.db"
log="$out/record.log"

# The resource root with the sub-space's templates.
root="$out/root"
rm -rf "$root.tmp"
mkdir -p "$root.tmp"
cp -r "$repo/python" "$repo/data" "$root.tmp/"
find "$root.tmp/python" -name __pycache__ -prune -exec rm -rf {} +
"$PY" - "$root.tmp/data/skills" "$axes" <<'PY'
import json, pathlib, sys
skills, axes = pathlib.Path(sys.argv[1]), json.load(open(sys.argv[2]))
wanted = {k: v for k, v in axes.items() if not k.startswith("_")}
for f in sorted(skills.glob("*.json")):
    t = json.loads(f.read_text())
    if not isinstance(t, dict) or t.get("id") not in wanted:
        continue
    sub = wanted.pop(t["id"])
    for name, values in sub.items():
        full = t["params"].get(name)
        if full is None or any(v not in full for v in values):
            sys.exit(f"record_landscapes: {t['id']}.{name}: {values} is not a subset of {full}")
        if values != [v for v in full if v in values]:
            sys.exit(f"record_landscapes: {t['id']}.{name}: keep the template's order {full}")
    if set(sub) != set(t["params"]):
        sys.exit(f"record_landscapes: {t['id']}: give every axis of {sorted(t['params'])}")
    t["params"] = sub
    f.write_text(json.dumps(t, indent=2) + "\n")
if wanted:
    sys.exit(f"record_landscapes: no template {sorted(wanted)} in data/skills")
PY
rm -rf "$root"
mv "$root.tmp" "$root"
export OPENKERNEL_HOME="$root"

start=$(date +%s)
col=$([ "$backend" = cpu ] && echo 2 || echo 3)
threads=${THREADS:-$([ "$backend" = cpu ] && echo 1 || echo "")}
stop_of() {  # problem id -> the stop reason of its last optimize run ("" none)
  "$PY" - "$out/L1_$1.json" <<'PY'
import json, sys
try:
    print(json.loads(open(sys.argv[1]).read().splitlines()[-1]).get("stop_reason", ""))
except Exception:
    print("")
PY
}
count() {  # session, what -> attempts (all) or measured points or the mean evaluation wall time
  "$PY" - "$db" "$1" "$2" <<'PY'
import os, sqlite3, sys
db, s, what = sys.argv[1:]
if not os.path.exists(db):
    print(0); sys.exit()
c = sqlite3.connect(db)
if what == "attempts":
    q = "SELECT COUNT(*) FROM attempts WHERE session=?"
elif what == "measured":
    q = "SELECT COUNT(*) FROM attempts WHERE session=? AND evaluation_id IS NOT NULL"
else:
    q = "SELECT COALESCE(AVG(wall_s), 0) FROM attempts WHERE evaluation_id IS NOT NULL AND ?<>''"
print(c.execute(q, (s,)).fetchone()[0] if what != "wall" else round(c.execute(q, (s,)).fetchone()[0]))
PY
}
while IFS=$'\t' read -r -a row; do
  id=${row[0]:-}
  case "$id" in ''|'#'*) continue ;; esac
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $id "* ]]; then continue; fi
  s="land-$backend-L1_$id"
  if [ "$(stop_of "$id")" = exhausted ]; then
    echo "L1_$id: done, $(count "$s" measured) points"
    continue
  fi
  iterations=4096 limit=()
  if [ -n "${SLICE_S:-}" ]; then
    left=$(( SLICE_S - ($(date +%s) - start) ))
    per=$(count "$s" wall)
    [ "$per" -gt 0 ] || per=${EVAL_S:-15}
    fit=$(( (left - ${START_S:-40}) / per ))
    if [ "$fit" -lt 1 ]; then
      echo "L1_$id: left for the next slice ($(count "$s" measured) points so far)"
      continue
    fi
    iterations=$(( $(count "$s" attempts) + fit ))
    limit=(timeout -s INT -k 60 $(( left + 120 )))
  fi
  sets=()
  for kv in ${row[$((col - 1))]:--}; do [ "$kv" = - ] || sets+=(--set "$kv"); done
  common=(--db "$db" --iterations "$iterations" --out "$out/L1_$id" --json)
  if [ "$(count "$s" attempts)" = 0 ] && ! "$PY" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); sys.exit(0 if c.execute('SELECT 1 FROM sessions WHERE id=?', (sys.argv[2],)).fetchone() else 1)" "$db" "$s" 2>/dev/null; then
    args=(optimize "${common[@]}" --session "$s" --search prior --model builtin
          --backend "$backend" --seed 1 --stop-at-sol 2 --no-skills --level 1 --problem "$id"
          --kernelbench-dir "$KB" --trials "${TRIALS:-2}" --timing-budget "${TIMING_BUDGET:-0.5}"
          --no-compile-baseline "${sets[@]}")
    [ -z "$threads" ] || args+=(--threads "$threads")
  else
    args=(optimize "${common[@]}" --resume "$s")
  fi
  rc=0
  echo "# $(date -u +%FT%TZ) $s: ${args[*]}" >>"$log"
  "${limit[@]}" nice -n "${NICE:-10}" "$BIN" "${args[@]}" >"$out/L1_$id.json" 2>>"$log" || rc=$?
  lost=$(( $(count "$s" attempts) - $(count "$s" measured) ))
  echo "L1_$id: $(stop_of "$id") (exit $rc), $(count "$s" measured) points$([ "$lost" = 0 ] || echo ", $lost not measured (cut short: missing from the landscape)")"
done <"$problems"
echo "# CPU time of this slice (user, system; the shell, then its children):"
times
