#!/usr/bin/env bash
# GPU run for the evaluator's throughput and timing fidelity (issue 3): per-candidate wall time in
# a warm worker (bench/warm_worker.py, the worker `optimize` keeps) with and without the spare
# candidate process, `openkernel evaluate` from a cold start, and bench/timing_fidelity.py (ncu,
# do_bench, CV, the idle-gap variant). KernelBench level1/19_ReLU and 23_Softmax at full size.
# Run from the repo root on the GPU machine after scripts/bundle-device.sh; results go to $OUT.
#   tests/gpu/run_h200_throughput.sh [warm|cold|fidelity ...]   (default: all three)
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
BIN=.device/bin/openkernel
KB=.device/kernelbench
C=tests/gpu/candidates
parts=${*:-warm cold fidelity}
for part in $parts; do
  case $part in
    warm)
      # Fresh caches: pass 1 compiles (cold), passes 2-3 hit the caches (warm). Then new Triton
      # sources every time (--unique: Triton compiles each, as in a search).
      for spare in on off; do
        flag=(); [ $spare = off ] && flag=(--no-spare)
        echo "## relu_triton, relu_nvcc: warm worker, spare $spare"
        python3 bench/warm_worker.py --reference $KB/level1/19_ReLU.py --backend triton \
          --candidate $C/relu_triton.py --candidate $C/relu_nvcc.py --repeat 3 \
          --cache-dir "$(mktemp -d /tmp/okwarm.XXXXXX)" "${flag[@]}" --json "$OUT/warm_relu_$spare.json"
      done
      echo "## relu_triton, a new source each time: warm worker, spare on"
      python3 bench/warm_worker.py --reference $KB/level1/19_ReLU.py --backend triton \
        --candidate $C/relu_triton.py --repeat 6 --unique \
        --cache-dir "$(mktemp -d /tmp/okwarm.XXXXXX)" --json "$OUT/warm_relu_unique.json"
      echo "## softmax_triton, a new source each time: warm worker, spare on"
      python3 bench/warm_worker.py --reference $KB/level1/23_Softmax.py --backend triton \
        --candidate $C/softmax_triton.py --repeat 4 --unique \
        --cache-dir "$(mktemp -d /tmp/okwarm.XXXXXX)" --json "$OUT/warm_softmax.json"
      ;;
    cold)
      # `openkernel evaluate` from nothing: a new engine, worker and candidate process, and
      # empty compile caches (cold), then the same again with the caches filled (warm).
      for c in relu_nvcc:cuda relu_triton:triton; do
        IFS=: read -r name backend <<<"$c"
        root=$(mktemp -d /tmp/okcold.XXXXXX)
        for caches in cold warm; do
          t0=$(date +%s.%N)
          XDG_CACHE_HOME=$root $BIN evaluate --level 1 --problem 19 --kernelbench-dir $KB \
            --backend "$backend" --candidate $C/$name.py --json --db "$root/db" \
            > "$root/$caches.json" 2> "$root/$caches.err"
          t1=$(date +%s.%N)
          python3 - "$root/$caches.json" "$name" "$caches" "$t0" "$t1" <<'PY'
import json, sys
path, name, caches, t0, t1 = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{name}\t{caches}\tfailed: {e}")
    sys.exit()
ph = " ".join(f"{k}={v:.2f}" for k, v in (r.get("phases_s") or {}).items())
print(f"{name}\tevaluate {caches}\t{r['verdict']}\twall {float(t1) - float(t0):.1f} s\t"
      f"worker {r.get('worker_wall_s', 0):.1f} s\t{ph}")
PY
        done
      done
      ;;
    fidelity)
      echo "## timing fidelity"
      python3 bench/timing_fidelity.py | tee "$OUT/fidelity.tsv"
      ;;
  esac
done
