#!/usr/bin/env bash
# GPU acceptance run for the evaluator (issue 2): correct and incorrect CUDA candidates and a
# correct Triton candidate for KernelBench level1/19_ReLU and level1/23_Softmax at full size.
# Run on a GPU machine from the repo root after scripts/bundle-device.sh; results go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache
BIN=.device/bin/openkernel
KB=.device/kernelbench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
printf 'problem\tcandidate\tbackend\tverdict\tspeedup\tcand_median_us\tref_median_us\tcompile_s\twall_s\n' > "$OUT/summary.tsv"
run() {  # problem candidate backend
  local name=$2 start end
  start=$(date +%s.%N)
  $BIN evaluate --level 1 --problem "$1" --kernelbench-dir "$KB" --backend "$3" \
    --candidate "tests/gpu/candidates/$2.py" ${OPENKERNEL_EVAL_FLAGS:-} --json --db "$OUT/gpu.db" > "$OUT/$2.json" 2> "$OUT/$2.err"
  local rc=$?
  end=$(date +%s.%N)
  python3 - "$OUT/$2.json" "$1" "$2" "$3" "$rc" "$start" "$end" >> "$OUT/summary.tsv" <<'PY'
import json, sys
path, prob, cand, backend, rc, start, end = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception:
    print(f"{prob}\t{cand}\t{backend}\texit {rc}\t\t\t\t\t{float(end) - float(start):.1f}")
    sys.exit()
fmt = lambda v: "" if v is None else f"{v:.4g}"
print("\t".join([prob, cand, backend, r["verdict"], fmt(r["speedup"]), fmt(r["runtime_us"]["median"]),
                 fmt(r["ref_runtime_us"]["median"]), fmt(r.get("compile_s")), f"{float(end) - float(start):.1f}"]))
PY
}
ALL="19:relu_cuda:cuda 19:relu_cuda_wrong:cuda 19:relu_triton:triton 19:relu_nvcc:cuda 23:softmax_cuda:cuda
     23:softmax_cuda_wrong:cuda 23:softmax_triton:triton"
for pass in ${PASSES:-cold warm}; do
  for c in ${CANDIDATES:-$ALL}; do
    IFS=: read -r prob cand backend <<<"$c"
    run "$prob" "$cand" "$backend"
  done
  cp "$OUT/summary.tsv" "$OUT/summary_$pass.tsv"
done
cat "$OUT/summary.tsv"
