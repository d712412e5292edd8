#!/usr/bin/env bash
# Builds everything and runs every default test (C++ unit and integration tests, the Python
# worker's tests, the CLI and adversarial tests, the honest corpus) and ends with each suite's
# duration (ctest's own per-test times are above it).
# Usage: scripts/test.sh [--asan]
#   --asan (or OPENKERNEL_ASAN=1) then builds everything again under ASan+UBSan and runs the C++
#   tests there: about 30 minutes more on two cores, so, like the tests labelled slow, it is not
#   part of the default run, whose whole must stay inside CI's 90 minutes.
# Slow and GPU tests are labelled and excluded here: run them with
# `ctest --test-dir build/release -L slow` or `-L gpu` (the release test preset excludes both).
set -euo pipefail
cd "$(dirname "$0")/.."
asan=${OPENKERNEL_ASAN:-0}
for arg in "$@"; do
  case "$arg" in
    --asan) asan=1 ;;
    *) echo "test.sh: unknown argument $arg (usage: scripts/test.sh [--asan])" >&2; exit 2 ;;
  esac
done

durations=()
status=0  # the first failing suite's exit code
last=0    # the last suite's
# suite NAME COMMAND...: runs one suite, notes its duration and whether it failed, and goes on so
# that one failing suite does not hide the others' results.
suite() {
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  durations+=("$(printf '%-34s %5d s%s' "$name" $((SECONDS - start)) "$([ $rc -eq 0 ] || echo "  FAILED (exit $rc)")")")
  last=$rc
  [ $rc -eq 0 ] || [ $status -ne 0 ] || status=$rc
  return 0
}
summary() {
  echo
  echo "test.sh: suite durations"
  printf '  %s\n' "${durations[@]}"
  printf '  %-34s %5d s\n' "total" "$SECONDS"
}
trap summary EXIT

suite "set-up and release build" scripts/setup.sh --tests release
[ $last -eq 0 ] || exit $status  # nothing to test without a build
# C++ tests in parallel; the Python suites one at a time, because the CLI and adversarial suites
# time honest candidates and check the candidate's clock against the worker's: on two cores a
# concurrent suite stretches wall time enough to trip those checks.
suite "C++ tests (unit, llm)" ctest --test-dir build/release -j2 --output-on-failure -LE 'python|slow|gpu'
# one suite per Python test ctest knows (the preset leaves out slow and gpu)
for name in $(ctest --preset release -N -L python | sed -n 's/^ *Test *#[0-9]*: //p'); do
  suite "Python: $name" ctest --preset release -j1 -L python -R "^${name}\$"
done
if [ "$asan" = 1 ]; then
  suite "ASan+UBSan build" scripts/setup.sh asan
  [ $last -ne 0 ] || suite "C++ tests under ASan+UBSan" ctest --preset asan -j2
fi
exit $status
