#!/usr/bin/env bash
# The main job on its embedded defaults: set up, build, then optimise the bundled example with the
# offline builtin generator (CPU when no GPU is present) and print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --target openkernel release  # the engine only: the tests build in scripts/test.sh
exec build/release/bin/openkernel optimize --reference examples/swish_chain/reference.py \
  --model builtin --out openkernel-out/example "$@"
