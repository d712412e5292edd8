#!/usr/bin/env bash
# GPU run for `openkernel optimize --model builtin` (issue 5): KernelBench problems at full size,
# one optimize session each, with a TSV of verdicts, speedups vs eager and torch.compile, and the
# best kernel's bandwidth as a fraction of the measured copy bandwidth. Run from the repo root on
# the GPU machine after scripts/bundle-device.sh; results go to $OUT.
#   BACKENDS="triton cuda" PROBLEMS="1:19 1:23 2:76" ITERATIONS=3 tests/gpu/run_h200_optimize.sh
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
# Sessions write many files; they live in $WORK and come back as one archive (optimize.tgz)
# next to summary.tsv, so a file-count limit on $OUT cannot drop the summary.
WORK=${WORK:-/tmp/openkernel-optimize}
mkdir -p "$OUT" "$WORK"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
BIN=.device/bin/openkernel
KB=.device/kernelbench
PROBLEMS=${PROBLEMS:-"1:19 1:21 1:26 1:23 1:40 1:36 1:47 1:49"}
TSV="$OUT/summary.tsv"
[ -f "$TSV" ] || printf 'level\tproblem\tname\tbackend\tverdict\tspeedup_eager\tspeedup_compile\truntime_us\teager_us\tcompile_us\tbandwidth_fraction\tspeed_of_light\tattempts\tstop\twall_s\n' > "$TSV"
for backend in ${BACKENDS:-triton cuda}; do
  for p in $PROBLEMS; do
    IFS=: read -r level num <<<"$p"
    tag="l${level}_${num}_${backend}"
    start=$(date +%s.%N)
    timeout "${PROBLEM_TIMEOUT:-240}" $BIN optimize --level "$level" --problem "$num" --kernelbench-dir "$KB" \
      --backend "$backend" --model builtin --iterations "${ITERATIONS:-3}" --seed 1 --json \
      --out "$WORK/$tag" --db "$WORK/optimize.db" ${OPTIMIZE_FLAGS:-} \
      > "$WORK/$tag.json" 2> "$WORK/$tag.err"
    rc=$?
    end=$(date +%s.%N)
    python3 - "$WORK/$tag.json" "$level" "$num" "$backend" "$rc" "$start" "$end" >> "$TSV" <<'PY'
import json, sys
path, level, num, backend, rc, start, end = sys.argv[1:]
wall = f"{float(end) - float(start):.1f}"
try:
    r = json.loads(open(path).read().strip().splitlines()[-1])
except Exception:
    print("\t".join([level, num, "", backend, f"exit {rc}"] + [""] * 9 + [wall]))
    sys.exit()
f = lambda v, s="{:.4g}": "" if v is None else s.format(v)
print("\t".join([level, num, r["problem"]["name"], backend, r["verdict"], f(r["speedup"]),
                 f(r["speedup_compile"]), f(r["runtime_us"]), f(r["eager_runtime_us"]),
                 f(r["compile_runtime_us"]), f(r["bandwidth_fraction"], "{:.2f}"),
                 f(r["fraction_of_speed_of_light"], "{:.2f}"), str(r["attempts"]),
                 r["stop_reason"], wall]))
PY
  done
done
tar -czf "$OUT/optimize.tgz" -C "$WORK" --exclude='*.db*' . 2>/dev/null
column -t -s $'\t' "$TSV"
