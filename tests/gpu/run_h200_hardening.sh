#!/usr/bin/env bash
# GPU run for the evaluator hardening (issue 3) and the acceptance candidates (issue 2): the
# acceptance candidates once (cold caches), the GPU adversarial suite, timing fidelity against
# ncu and do_bench, and warm wall time per candidate. Run after scripts/bundle-device.sh.
# Writes at most 8 files to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache PYTHONUNBUFFERED=1
export OPENKERNEL_BIN=$PWD/.device/bin/openkernel OPENKERNEL_KERNELBENCH_DIR=$PWD/.device/kernelbench
export OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
{
  echo "== sandbox probe =="
  if PYTHONPATH=python python3 -c "
import sys
from openkernel_worker import sandbox
p = sandbox.probe('gpu'); print(p); sys.exit(0 if p.ok else 1)"; then
    echo "sandbox: on"
  else
    echo "sandbox: UNAVAILABLE here, running with --no-sandbox"
    export OPENKERNEL_EVAL_FLAGS=--no-sandbox OPENKERNEL_NO_SANDBOX=1
  fi
  echo "== adversarial (gpu) =="
  OPENKERNEL_ADVERSARIAL_OUT=$OUT/adversarial_gpu.jsonl python3 -m pytest -q -rs -p no:cacheprovider -m gpu tests/adversarial
  echo "== acceptance candidates (cold) =="
  OUT=/tmp/okgpu PASSES=cold tests/gpu/run_h200.sh
  cp /tmp/okgpu/summary.tsv "$OUT/acceptance.tsv"
  python3 -c "import json; r=json.load(open('/tmp/okgpu/relu_cuda.json')); print(json.dumps({k: r.get(k) for k in ('sandbox','flags','timing','wall_check','roofline','profile')}))"
  echo "== timing fidelity =="
  python3 bench/timing_fidelity.py | tee "$OUT/fidelity.tsv"
  if [ "${SKIP_BENCH:-0}" != 1 ]; then
    echo "== warm wall time per candidate =="
    bench/eval_wall_time.sh --gpu 1 | tee "$OUT/bench_gpu.tsv"
  fi
} > "$OUT/log.txt" 2>&1
tail -40 "$OUT/log.txt"
