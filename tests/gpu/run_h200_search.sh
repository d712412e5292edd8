#!/usr/bin/env bash
# GPU run for the search benchmark (issue 6): bench/search_vs_best_of_n.sh's landscape for the
# Triton backend, KernelBench level 1 at full size, with the bundled engine. Run from the repo root
# on the GPU machine after scripts/bundle-device.sh. The landscape (bench.db, landscape.log,
# replay.txt) comes back in $OUT/landscape-$TAG.tgz; replay several runs' databases together here
# with `search_replay --db A.db --db B.db ...`.
#   TAG=a PROBLEMS="36 47" DEADLINE=$(( $(date +%s) + 500 )) tests/gpu/run_h200_search.sh
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
TAG=${TAG:-run}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
export OPENKERNEL_BIN=$PWD/.device/bin/openkernel OPENKERNEL_KERNELBENCH_DIR=$PWD/.device/kernelbench
export SEARCH_REPLAY=$PWD/.device/bin/search_replay
work=/tmp/land-$TAG
bench/search_vs_best_of_n.sh triton "$work"
tar -czf "$OUT/landscape-$TAG.tgz" -C "$work" bench.db landscape.log $(cd "$work" && ls replay.* 2>/dev/null)
