#!/usr/bin/env bash
# GPU run for the evaluator's throughput and timing fidelity (issue 3): per-candidate wall time in
# a warm worker (bench/warm_worker.py, the worker `optimize` keeps) with and without the spare
# candidate process, `openkernel evaluate` from a cold start, and bench/timing_fidelity.py (ncu,
# do_bench, CV, the idle-gap variant). KernelBench level1/19_ReLU and 23_Softmax at full size.
# Run from the repo root on the GPU machine after scripts/bundle-device.sh; results go to $OUT.
# Also: "modes" (new Triton sources in a warm worker under each spare overlap mode, imports and
# context), "interference" (bench/spare_interference.py) and "rested" (`openkernel evaluate` of a
# compute-bound fp32 Triton matmul, level1/1, rested and back to back).
#   tests/gpu/run_h200_throughput.sh [warm|cold|fidelity|modes|interference|rested ...]
#   (default: warm cold fidelity)
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
    modes)
      # MODES: overlap:spares pairs (default: the old default and the new one, context with 4)
      for m in ${MODES:-imports:2 context:4}; do
        IFS=: read -r mode spares <<<"$m"
        echo "## relu_triton, a new source each time: warm worker, spare overlap $mode, $spares spares"
        OPENKERNEL_SPARE_OVERLAP=$mode OPENKERNEL_SPARES=$spares python3 bench/warm_worker.py \
          --reference $KB/level1/19_ReLU.py --backend triton --candidate $C/relu_triton.py \
          --repeat 6 --unique --cache-dir "$(mktemp -d /tmp/okwarm.XXXXXX)" \
          --json "$OUT/warm_relu_unique_${mode}_$spares.json"
      done
      ;;
    interference)
      echo "## spare start-up stages against the evaluator's timing"
      python3 bench/spare_interference.py --rounds 2 --json "$OUT/interference.json" \
        | tee "$OUT/interference.tsv"
      ;;
    rested)
      for rested in auto off; do
        echo "## matmul_triton (level1/1, fp32 4096^3), rested $rested"
        $BIN evaluate --level 1 --problem 1 --kernelbench-dir $KB --backend triton \
          --candidate $C/matmul_triton.py --rested $rested --timing-budget 8 --json \
          --db /tmp/okrested.db > "$OUT/rested_$rested.json" 2> "$OUT/rested_$rested.err"
        python3 - "$OUT/rested_$rested.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("timing") or {}
rest = t.get("rested") or {}
b2b = rest.get("back_to_back") or {}
med = lambda s: (s or {}).get("median")
print(f"verdict {r['verdict']} flags {r['flags']} mode {t.get('mode')} speedup {r.get('speedup')}")
print(f"  reported: candidate {med(r.get('runtime_us'))} us, reference {med(r.get('ref_runtime_us'))} us")
print(f"  back to back: candidate {med(b2b.get('runtime_us'))} us, reference "
      f"{med(b2b.get('ref_runtime_us'))} us; ratios {rest.get('ratio')} {rest.get('ref_ratio')}")
print(f"  wall checks {r.get('wall_check')} {r.get('rested_wall_check')}")
PY
      done
      ;;
    fidelity)
      echo "## timing fidelity"
      python3 bench/timing_fidelity.py | tee "$OUT/fidelity.tsv"
      ;;
  esac
done
