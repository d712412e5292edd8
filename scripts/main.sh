#!/usr/bin/env bash
# The main job on its embedded defaults: set up, build, then run OpenKernel on the bundled example
# (CPU when no GPU is present).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release
exec build/release/bin/openkernel example "$@"
