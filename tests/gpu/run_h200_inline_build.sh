#!/usr/bin/env bash
# load_inline through torch and through our cached build (bench/inline_build.py), side by side on
# the GPU machine: cold (empty caches; the precompiled header's one-time cost apart), a new CUDA
# body with the same signature once the header cache exists, and warm. Then nvcc's steps as the
# worker schedules them against plain `nvcc -c` (bench/nvcc_schedule.py: a plain .cu and one that
# includes torch/extension.h, for sm_90a; times and object/symbol checks). Run from the repo root:
#   OUT=/tmp/okgpu-inline tests/gpu/run_h200_inline_build.sh          # both parts
#   PART=inline (or PART=nvcc) OUT=/tmp/okgpu-inline tests/gpu/run_h200_inline_build.sh
#   BUILDERS=ours PART=inline ...   (our builder only: a quick check of its cold and warm builds)
# Needs python3 with torch (+ nvcc, g++, ninja); bwrap from .device/bin when bundled
# (scripts/bundle-device.sh), else from PATH. Results: $OUT/inline_build.tsv, $OUT/log.txt,
# $OUT/nvcc_*.json. Expect under 10 minutes for `inline` (torch's cold builds are ~56 s x 3) and
# about 4 minutes for `nvcc`.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/okgpu-inline}
PART=${PART:-all}
mkdir -p "$OUT"
[ -x .device/bin/bwrap ] && export OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
[ -d .device/lib ] && export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  nvcc --version | tail -1; g++ --version | head -1; nproc
  PYTHONPATH=python python3 -c "from openkernel_worker import sandbox; print(sandbox.probe('cpu'))"
  if [ "$PART" != nvcc ]; then
    timeout -k 10 580 python3 bench/inline_build.py --out "$OUT" --builders "${BUILDERS:-torch,ours}"
    echo "inline rc $?"
  fi
  if [ "$PART" != inline ]; then
    for case in plain torch; do
      timeout -k 10 280 python3 bench/nvcc_schedule.py --case $case --out "$OUT/nvcc" \
        | tee "$OUT/nvcc_$case.json"
      echo "nvcc $case rc ${PIPESTATUS[0]}"
    done
  fi
} 2>&1 | tee "$OUT/log.txt"
