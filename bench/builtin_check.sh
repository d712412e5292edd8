#!/usr/bin/env bash
# Generates builtin candidates for a list of problems and evaluates them.
#
#   bench/builtin_check.sh BACKEND [NAME...]      (names from tests/fixtures/generate/problems.tsv)
#
# For each problem: the graph IR comes from the worker's analyze op when it exists (with the same
# --set overrides), else from the hand-written fixture; generate_candidates writes the candidates;
# `openkernel evaluate` checks the first $OK_TOP of them (default 1). Prints one line per
# candidate: name, pattern, params, verdict, speedup. On a machine without the backend's device
# (e.g. triton/cuda here) set OK_COMPILE_ONLY=1: Python candidates are byte-compiled and CUDA
# sources are built with nvcc instead.
#
# Environment: OK_BUILD (build dir with bin/generate_candidates and bin/openkernel), OK_OPENKERNEL
# (the openkernel binary, default $OK_BUILD/bin/openkernel), OK_PYTHON (python with torch),
# OK_KERNELBENCH (KernelBench dir), OK_TOP, OK_OUT (output dir), OK_EVAL_ARGS (extra flags),
# OK_PROBLEMS (the problem list, default tests/fixtures/generate/problems.tsv).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
backend="${1:?usage: builtin_check.sh BACKEND [NAME...]}"
shift
build="${OK_BUILD:-$root/build/release}"
gen="$build/bin/generate_candidates"
ok="${OK_OPENKERNEL:-$build/bin/openkernel}"
py="${OK_PYTHON:-python3}"
kb="${OK_KERNELBENCH:-${OPENKERNEL_KERNELBENCH_DIR:-$root/../shared/kernelbench}}"
top="${OK_TOP:-1}"
out="${OK_OUT:-$(mktemp -d /tmp/builtin-check.XXXXXX)}"
fixtures="$root/tests/fixtures/generate"
mkdir -p "$out"
echo "# backend=$backend out=$out"
printf '%-16s %-24s %-10s %-14s %s\n' name pattern candidate verdict speedup
while IFS=$'\t' read -r name ir ref sets; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if [[ $# -gt 0 ]] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  if [[ "$ref" == kb:* ]]; then ref="$kb/${ref#kb:}"; else ref="$root/$ref"; fi
  set_args=()
  for s in $sets; do set_args+=(--set "$s"); done
  dir="$out/$name"
  mkdir -p "$dir"
  irfile="$fixtures/$ir"
  if [[ -f "$root/python/openkernel_worker/analyze.py" ]]; then
    if (cd "$root/python" && "$py" -c 'import json, sys
from openkernel_worker.analyze import analyze
print(json.dumps(analyze(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:]))))' \
        "$ref" $sets > "$dir/ir.json" 2> "$dir/analyze.err"); then
      irfile="$dir/ir.json"
    fi
  fi
  if ! "$gen" "$irfile" "$ref" "$backend" "$dir" "$top" > "$dir/generate.log" 2>&1; then
    printf '%-16s %-24s %-10s %-14s %s\n' "$name" "-" "-" "unsupported" "$(tail -1 "$dir/generate.log")"
    continue
  fi
  pattern="$(sed -n 's/^supported: //p' "$dir/generate.log")"
  for cand in "$dir"/candidate_*.py; do
    c="$(basename "$cand" .py)"
    if [[ "${OK_COMPILE_ONLY:-0}" == 1 ]]; then
      verdict=py_compile_ok
      "$py" -m py_compile "$cand" 2> "$dir/$c.compile.err" || verdict=py_compile_failed
      if [[ "$backend" == cuda && "$verdict" == py_compile_ok ]]; then
        "$py" - "$cand" "$dir/$c.cu" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(re.search(r'_OK_SOURCE = r"""\n(.*?)"""', src, re.S).group(1))
PY
        nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
        if "$nvcc" -c -O3 -std=c++17 -arch=sm_90 "$dir/$c.cu" -o "$dir/$c.o" 2> "$dir/$c.nvcc.err"; then
          verdict=nvcc_ok
        else
          verdict=nvcc_failed
        fi
      fi
      printf '%-16s %-24s %-10s %-14s %s\n' "$name" "$pattern" "$c" "$verdict" "-"
      continue
    fi
    "$ok" evaluate --reference "$ref" "${set_args[@]}" --candidate "$cand" --backend "$backend" \
      --python "$py" --json ${OK_EVAL_ARGS:-} > "$dir/$c.eval.json" 2> "$dir/$c.eval.err" || true
    "$py" - "$dir/$c.eval.json" "$name" "$pattern" "$c" <<'PY'
import json, sys
path, name, pattern, cand = sys.argv[1:5]
try:
    d = json.load(open(path))
except Exception as e:  # the evaluator failed before printing JSON
    print(f"{name:<16} {pattern:<24} {cand:<10} {'no_result':<14} see {path[:-5]}.err")
    sys.exit(0)
sp = d.get("speedup")
why = "" if d.get("verdict") == "correct" else "  " + "; ".join(d.get("reasons") or [])[:200]
print(f"{name:<16} {pattern:<24} {cand:<10} {d.get('verdict'):<14} {sp if sp is None else f'{sp:.3f}x'}{why}")
PY
  done
done < "${OK_PROBLEMS:-$fixtures/problems.tsv}"
