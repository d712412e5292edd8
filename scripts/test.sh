#!/usr/bin/env bash
# Builds everything and runs every default test (C++ unit and integration tests, the Python
# worker's tests, the CLI and adversarial tests), then the C++ tests again under ASan+UBSan.
# OPENKERNEL_SKIP_ASAN=1 skips the sanitizer pass while iterating.
# Slow and GPU tests are labelled and excluded here: run them with `ctest --preset release -L slow`
# or `-L gpu`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests release
# C++ tests in parallel; the Python suites one at a time, because the CLI and adversarial suites
# time honest candidates and check the candidate's clock against the worker's: on two cores a
# concurrent suite stretches wall time enough to trip those checks.
ctest --test-dir build/release -j2 --output-on-failure -LE 'python|slow|gpu'
ctest --preset release -j1 -L python
if [ "${OPENKERNEL_SKIP_ASAN:-0}" != 1 ]; then
  scripts/setup.sh asan
  ctest --preset asan -j2
fi
