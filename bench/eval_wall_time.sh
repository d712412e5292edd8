#!/usr/bin/env bash
# Wall time per evaluated candidate, end to end (process start to verdict), N runs each.
# CPU by default (the bundled example and KernelBench level1/19 and 23 shrunk with --set); with
# --gpu, the GPU candidates of tests/gpu at full size. Prints a TSV: case, run, verdict, wall_s.
# Usage: bench/eval_wall_time.sh [--gpu] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=0
[ "${1:-}" = "--gpu" ] && { gpu=1; shift; }
runs=${1:-3}
BIN=${OPENKERNEL_BIN:-build/release/bin/openkernel}
KB=${OPENKERNEL_KERNELBENCH_DIR:-../shared/kernelbench}
db=$(mktemp -d)/bench.db
printf 'case\trun\tverdict\twall_s\n'
one() {  # name, args...
  local name=$1; shift
  for i in $(seq "$runs"); do
    local t0 t1 verdict
    t0=$(date +%s.%N)
    verdict=$("$BIN" evaluate "$@" ${OPENKERNEL_EVAL_FLAGS:-} --json --db "$db" | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])')
    t1=$(date +%s.%N)
    printf '%s\t%s\t%s\t%s\n' "$name" "$i" "$verdict" "$(python3 -c "print(f'{$t1 - $t0:.2f}')")"
  done
}
if [ "$gpu" = 0 ]; then
  one example_swish --reference examples/swish_chain/reference.py --candidate examples/swish_chain/candidate.py --backend cpu
  one l1_19_relu_cpu --level 1 --problem 19 --kernelbench-dir "$KB" --set batch_size=64 --set dim=4096 \
      --candidate tests/integration/fixtures/cand_kernelbench_relu.py --backend cpu
else
  for c in relu_cuda:19:cuda relu_triton:19:triton softmax_cuda:23:cuda softmax_triton:23:triton; do
    IFS=: read -r name prob backend <<<"$c"
    one "$name" --level 1 --problem "$prob" --kernelbench-dir "$KB" --backend "$backend" \
        --candidate "tests/gpu/candidates/$name.py"
  done
fi
