#!/usr/bin/env bash
# The whole GPU run for the evaluator hardening (issue 3), each step time-boxed (`timeout`, its
# whole process group) so one hang cannot eat the run. The limits below add up to more than the
# `device` tool's 10 minutes a command: pick STEPS so that one call stays under them.
# Limits (a fresh machine: empty Triton, nvcc and torch caches; a CLI evaluation takes about 20 s):
#   1. sandbox probe                      (15 s)
#   2. adversarial GPU suite, pytest -m gpu (330 s; eager, rested and CUDA-graph cases, and a
#      load_inline candidate marked slow: about a minute to build cold)
#   3. acceptance candidates, cold        (90 s; the nvcc path and a Triton softmax)
#   4. timing fidelity: ncu / ours / do_bench, CV (90 s)
#   5. CUDA-graph mode and torch.compile baseline through the CLI (90 s)
#   6. KernelBench's harness side by side with ours, level1/19_ReLU full size, the Triton and
#      the nvcc candidate (480 s; KernelBench takes 110-130 s per candidate)
#   7. rested timing through the CLI, a compute-bound fp32 Triton matmul (90 s)
#   8. spare start-up stages against the evaluator's timing (120 s)
#   9. new Triton sources in a warm worker per spare overlap mode (150 s)
# Run from the repo root after building (build/release) and scripts/bundle-device.sh; the GPU
# machine needs only python3 with torch and triton (bwrap, the engine and its libraries come in
# .device). Results in $OUT: log.txt, steps.tsv (step, rc, seconds), adversarial_gpu.jsonl,
# acceptance.tsv, fidelity.tsv, graph_*.json, graph.tsv, side_by_side.tsv/.md.
# STEPS="probe adversarial acceptance fidelity graph sidebyside rested interference modes" selects
# steps (default: the first six).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/openkernel-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache PYTHONUNBUFFERED=1
export OPENKERNEL_BIN=$PWD/.device/bin/openkernel OPENKERNEL_KERNELBENCH_DIR=$PWD/.device/kernelbench
export OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap KERNELBENCH_SRC=$PWD/.device/kernelbench-src
export OUT
STEPS=${STEPS:-probe adversarial acceptance fidelity graph sidebyside}
printf 'step\trc\tseconds\n' > "$OUT/steps.tsv"

step() {  # name limit_s shell-command (functions below are exported)
  local name=$1 limit=$2 t0 rc
  case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
  echo "== $name (limit ${limit}s) =="
  t0=$(date +%s)
  timeout -k 10 "$limit" bash -c "$3"
  rc=$?
  [ "$rc" = 124 ] && echo "!! $name: timed out after ${limit}s"
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$OUT/steps.tsv"
  return "$rc"
}

probe() {
  PYTHONPATH=python python3 -c "
import sys
from openkernel_worker import sandbox
p = sandbox.probe('gpu'); print(p); sys.exit(0 if p.ok else 1)"
}

acceptance() {
  OUT=/tmp/okgpu PASSES=cold CANDIDATES="19:relu_nvcc:cuda 23:softmax_triton:triton" tests/gpu/run_h200.sh
  cp /tmp/okgpu/summary.tsv "$OUT/acceptance.tsv"
  python3 -c "import json; r=json.load(open('/tmp/okgpu/relu_nvcc.json')); print(json.dumps({k: r.get(k) for k in ('verdict','flags','sandbox','timing','wall_check','roofline','compile_s')}))"
}

graph() {  # tiny ReLU (1 MiB): auto picks CUDA graphs; the same at full size must stay on events
  printf 'case\tverdict\tmode\tcand_us\tref_us\tspeedup\teager_cand_us\tcompile_us\tspeedup_compile\tnote\n' > "$OUT/graph.tsv"
  local c
  for c in "relu_triton:triton:auto:small" "relu_nvcc:cuda:on:small" "relu_triton:triton:auto:full"; do
    IFS=: read -r name backend mode size <<<"$c"
    local sets=()
    [ "$size" = small ] && sets=(--set batch_size=64 --set dim=4096)
    "$OPENKERNEL_BIN" evaluate --level 1 --problem 19 --kernelbench-dir "$OPENKERNEL_KERNELBENCH_DIR" \
      "${sets[@]}" --backend "$backend" --candidate "tests/gpu/candidates/$name.py" \
      --cuda-graph "$mode" --compile-baseline --timing-budget 2 ${OPENKERNEL_EVAL_FLAGS:-} --json \
      --db "$OUT/graph.db" > "$OUT/graph_${name}_$size.json" 2> "$OUT/graph_${name}_$size.err"
    python3 - "$OUT/graph_${name}_$size.json" "${name}_${mode}_$size" >> "$OUT/graph.tsv" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]}\tno result: {e}"); sys.exit()
t = r.get("timing") or {}
f = lambda v: "" if v is None else f"{v:.3f}"
med = lambda s: (s or {}).get("median")
cb = r.get("compile_baseline") or {}
note = (t.get("cuda_graph") or {}).get("reason") or cb.get("reason") or "; ".join(r["flags"])
print("\t".join([sys.argv[2], r["verdict"], str(t.get("mode")), f(med(r["runtime_us"])),
                 f(med(r["ref_runtime_us"])), f(r.get("speedup")),
                 f(med((t.get("events") or {}).get("runtime_us"))), f(med(r.get("compile_runtime_us"))),
                 f(r.get("speedup_compile")), str(note)[:200]]))
PY
  done
  cat "$OUT/graph.tsv"
}

export -f probe acceptance graph
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  case " $STEPS " in
    *" probe "*)
      if step probe 15 probe; then
        echo "sandbox: on"
      else
        echo "sandbox: UNAVAILABLE here, running with --no-sandbox"
        export OPENKERNEL_EVAL_FLAGS=--no-sandbox OPENKERNEL_NO_SANDBOX=1
      fi ;;
  esac
  export OPENKERNEL_ADVERSARIAL_OUT=$OUT/adversarial_gpu.jsonl
  step adversarial 330 "python3 -m pytest -q -rs -p no:cacheprovider -m gpu tests/adversarial"
  step acceptance 90 acceptance
  step fidelity 90 'python3 bench/timing_fidelity.py | tee "$OUT/fidelity.tsv"'
  step graph 90 graph
  step sidebyside 480 'CANDIDATES=${CANDIDATES:-"relu_triton:triton relu_nvcc:cuda"} KB_CANDIDATES=${KB_CANDIDATES:-"relu_triton:triton relu_nvcc:cuda"} bench/kernelbench_side_by_side.sh'
  step rested 90 "tests/gpu/run_h200_throughput.sh rested"
  step interference 120 "tests/gpu/run_h200_throughput.sh interference"
  step modes 150 "tests/gpu/run_h200_throughput.sh modes"
  echo "== steps =="
  cat "$OUT/steps.tsv"
} > "$OUT/log.txt" 2>&1
tail -60 "$OUT/log.txt"
