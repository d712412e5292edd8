#!/usr/bin/env bash
# The three-level search against best-of-N sampling (and the proposer's own order) at equal
# evaluations, with the builtin generator as the proposal source.
#
#   bench/search_vs_best_of_n.sh [cpu|triton|cuda] [OUT_DIR]
#
# 1. Landscape: for each problem, `openkernel optimize --search prior` with enough iterations to
#    evaluate every template point of the builtin generator once, for real (sessions land-NAME in
#    OUT_DIR/bench.db), with `--stop-at-sol 2` so that reaching speed of light does not end it.
# 2. Replay: bench/search_replay runs each policy over those measurements for every budget in
#    $BUDGETS (default 2,3,4,6) and $SEEDS seeds (default 200): the engine with its strategy
#    population learning across the problems, best-of-n drawing without replacement by prior
#    weight, prior in order. Identical measurements for all, so re-measuring noise cannot decide.
#
# CPU (default): the fixed problem set of tests/fixtures/generate/problems.tsv, shapes shrunk with
# its --set overrides. GPU backends: KernelBench level 1 at full size, problems $PROBLEMS
# (default the builtin-supported row and pointwise problems 19,21,23,24,26,36,40,47,49,88), each
# point checked on $TRIALS trials (default 3) and timed for up to $TIMING_BUDGET s (default 1),
# without the torch.compile baseline. With $DEADLINE (seconds since the epoch) a problem is only
# started while at least $PROBLEM_MIN_S (default 60) remain, and is cut off at the deadline (its
# points measured so far stay in the landscape, which the replay then reads as a smaller space).
# $PROBLEM_MAX_S cuts each problem off after that many seconds the same way, so that one large
# space cannot take a whole time-boxed run.
# Writes OUT_DIR/landscape.log, OUT_DIR/replay.txt and OUT_DIR/replay.json.
# Environment: OPENKERNEL_BIN, OPENKERNEL_KERNELBENCH_DIR, SEARCH_REPLAY (the replay binary).
set -euo pipefail
cd "$(dirname "$0")/.."
backend=${1:-cpu}
out=${2:-$(mktemp -d /tmp/search-bench.XXXXXX)}
BIN=${OPENKERNEL_BIN:-build/release/bin/openkernel}
REPLAY=${SEARCH_REPLAY:-build/release/bin/search_replay}
KB=${OPENKERNEL_KERNELBENCH_DIR:-../shared/kernelbench}
BUDGETS=${BUDGETS:-2,3,4,6}
SEEDS=${SEEDS:-200}
for b in "$BIN" "$REPLAY"; do
  [ -x "$b" ] || { echo "search_vs_best_of_n: no $b (build first: cmake --build build/release)" >&2; exit 2; }
done
case "$backend" in cpu|triton|cuda) ;; *) echo "search_vs_best_of_n: backend cpu, triton or cuda" >&2; exit 2 ;; esac
mkdir -p "$out"
db="$out/bench.db"
sessions=()
measure() {  # name, optimize args...
  local name=$1; shift
  local s="land-$backend-$name" limit=()
  if [ -n "${DEADLINE:-}" ]; then
    local left=$(( DEADLINE - $(date +%s) ))
    if [ "$left" -lt "${PROBLEM_MIN_S:-60}" ]; then
      echo "# $name: skipped, ${left} s left before the deadline" >&2
      return 0
    fi
    limit=(timeout -s INT "$left")
  fi
  if [ -n "${PROBLEM_MAX_S:-}" ] && { [ ${#limit[@]} -eq 0 ] || [ "$PROBLEM_MAX_S" -lt "$left" ]; }; then
    limit=(timeout -s INT "$PROBLEM_MAX_S")
  fi
  if ! "${limit[@]}" "$BIN" optimize --db "$db" --session "$s" --search prior --iterations 512 \
      --model builtin --backend "$backend" --seed 1 --stop-at-sol 2 --out "$out/$name" --json \
      "$@" >"$out/$name.json" 2>>"$out/landscape.log"; then
    echo "# $name: optimize ended early (see landscape.log); its measured points are kept" >&2
    if python3 - "$db" "$s" <<'PY'; then sessions+=("$s"); fi
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute(
    "SELECT COUNT(*) FROM attempts WHERE session=? AND evaluation_id IS NOT NULL",
    (sys.argv[2],)).fetchone()[0]
sys.exit(0 if n else 1)
PY
    return 0
  fi
  python3 - "$out/$name.json" "$name" <<'PY' >&2
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(f"# {sys.argv[2]}: {r['attempts']} points, stop {r['stop_reason']}, best {r['speedup']}")
PY
  sessions+=("$s")
}
if [ "$backend" = cpu ]; then
  while IFS=$'\t' read -r name _ ref sets; do
    case "$name" in ''|'#'*|conv_relu_bias|gemm_add_relu) continue ;; esac
    args=()
    if [[ "$ref" == kb:* ]]; then
      lvl=${ref#kb:}; args=(--reference "$KB/$lvl")
    else
      args=(--reference "$ref")
    fi
    for kv in $sets; do args+=(--set "$kv"); done
    measure "$name" "${args[@]}" --trials 3 --timing-budget 1
  done < tests/fixtures/generate/problems.tsv
else
  for n in ${PROBLEMS:-19 21 23 24 26 36 40 47 49 88}; do
    measure "L1_$n" --level 1 --problem "$n" --kernelbench-dir "$KB" --trials "${TRIALS:-3}" \
      --timing-budget "${TIMING_BUDGET:-1}" --no-compile-baseline
  done
fi
[ ${#sessions[@]} -gt 0 ] || { echo "search_vs_best_of_n: no landscape measured" >&2; exit 1; }
"$REPLAY" --db "$db" --budgets "$BUDGETS" --seeds "$SEEDS" --json "$out/replay.json" \
  "${sessions[@]}" | tee "$out/replay.txt"
echo "# results in $out"
