#!/usr/bin/env bash
# Pre-builds on the GPU machine (bench/optimize_prebuild.py): `openkernel optimize` on a ReLU
# problem with a local model answering 3 distinct load_inline CUDA kernels, 3 in flight, with
# --prebuild off and then on, each with cold caches. Run from the repo root after
# scripts/bundle-device.sh:
#   OUT=/tmp/okgpu-prebuild tests/gpu/run_h200_prebuild.sh
# Results: $OUT/optimize_prebuild.{json,tsv}, $OUT/log.txt, each run's stderr under $OUT/prebuild-*.
# Expect about 3 cold CUDA builds of 35-55 s in a row without pre-builds (the header's
# precompilation once more), and with them the 2nd and 3rd built while the 1st is evaluated:
# about 5 minutes in all, at most 8.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/okgpu-prebuild}
mkdir -p "$OUT"
[ -x .device/bin/bwrap ] && export OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
[ -d .device/lib ] && export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BIN=.device/bin/openkernel
[ -x "$BIN" ] || BIN=build/release/bin/openkernel
export OPENKERNEL_HOME=$PWD PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  nvcc --version | tail -1; nproc
  timeout -k 10 470 python3 bench/optimize_prebuild.py --backend cuda --candidates 3 \
    --in-flight 3 --limit 230 --binary "$BIN" --out "$OUT"
  echo "rc $?"
} 2>&1 | tee "$OUT/log.txt"
