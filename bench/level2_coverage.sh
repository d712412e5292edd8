#!/usr/bin/env bash
# The builtin generator's coverage of a KernelBench level without evaluating anything: for each
# problem the worker's analyze op gives the graph IR (with `batch_size` set to 2 where the problem
# has one: the reduced size CPU runs use), generate_candidates plans and emits the first candidate,
# and one TSV row says whether it is supported (else the reason), its plan pattern, how many
# kernels its forward launches and how many PyTorch (vendor) calls it keeps.
#
#   bench/level2_coverage.sh [BACKEND [LEVEL]] > TSV       (defaults: cpu, 2)
#
# Environment: OK_BUILD (build dir with bin/generate_candidates), OK_PYTHON (python with torch),
# OK_KERNELBENCH (KernelBench dir), OK_OUT (work dir, default a temporary one).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
backend="${1:-cpu}"
level="${2:-2}"
build="${OK_BUILD:-$root/build/release}"
py="${OK_PYTHON:-python3}"
kb="${OK_KERNELBENCH:-${OPENKERNEL_KERNELBENCH_DIR:-$root/../shared/kernelbench}}"
out="${OK_OUT:-$(mktemp -d /tmp/coverage.XXXXXX)}"
mkdir -p "$out"
# One Python process analyses every problem (torch imported once).
(cd "$root/python" && "$py" - "$kb/level$level" "$out" <<'PY'
import json, os, re, sys
from openkernel_worker.analyze import analyze
src, out = sys.argv[1:3]
for f in sorted(os.listdir(src)):
    if not f.endswith(".py"):
        continue
    path = os.path.join(src, f)
    sets = {"batch_size": "2"} if re.search(r"^batch_size\s*=", open(path).read(), re.M) else {}
    try:
        ir = analyze(path, sets)
    except Exception as e:  # noqa: BLE001 - a reference the worker rejects
        ir = {"traceable": False, "reason": f"analyze failed: {type(e).__name__}: {e}"}
    with open(os.path.join(out, f[:-3] + ".ir.json"), "w") as fh:
        json.dump(ir, fh)
PY
)
printf 'problem\tsupported\tpattern\tkernels\tvendor_calls\treason\n'
for ref in $(ls "$kb/level$level"/*.py | sort -V); do
  name="$(basename "$ref" .py)"
  dir="$out/$name"
  mkdir -p "$dir"
  if "$build/bin/generate_candidates" "$out/$name.ir.json" "$ref" "$backend" "$dir" 1 \
      > "$dir/log" 2>&1; then
    pattern="$(sed -n 's/^supported: //p' "$dir/log")"
    fwd="$(sed -n '/^class ModelNew/,$p' "$dir/candidate_0.py")"
    kernels="$(grep -cE '_ok_lib\.ok_[a-z_0-9]+\(|\]\(' <<< "$fwd" || true)"
    # PyTorch calls kept: `self.<module>(args)`, `_ok_attr(self, "<path>")(args)`, torch calls.
    vendor="$(grep -oE '= (self\.[A-Za-z0-9_.]+|_ok_attr\(self, "[^"]*"\)|_ok_torch\.[A-Za-z0-9_.]+)\([^)]' \
      <<< "$fwd" | grep -vE '^= _ok_torch\.(empty|zeros)' | sed -E 's/^= //; s/\([^)]$//; s/_ok_attr\(self, "([^"]*)"\)/self.\1/' | paste -sd, || true)"
    printf '%s\tyes\t%s\t%s\t%s\t\n' "$name" "$pattern" "$kernels" "${vendor:--}"
  else
    reason="$(tail -1 "$dir/log" | sed 's/^unsupported: //' | tr '\t' ' ')"
    printf '%s\tno\t-\t-\t-\t%s\n' "$name" "$reason"
  fi
done
