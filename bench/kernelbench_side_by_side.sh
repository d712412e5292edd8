#!/usr/bin/env bash
# Per-candidate wall time of KernelBench's own harness next to `openkernel evaluate`, on the same
# candidates for level1/19_ReLU at full size (issue 3, "Throughput"). GPU machine only.
#
#   bench/kernelbench_side_by_side.sh            # writes $OUT/side_by_side.tsv and .md
#
# Ours: `openkernel evaluate` for each candidate cold (fresh compile caches, a fresh process as
# always) then warm (same caches); then the warm worker that `optimize` keeps, every candidate a
# new source ($WORKER_CANDIDATES, default relu_triton relu_nvcc, $WORKER_REPEAT times, default 4). KernelBench: bench/kernelbench_driver.py runs its eval_kernel_against_ref the way its
# scripts/run_and_check.py does locally (static check, 5 correctness trials, 100 perf trials with
# cuda events, then the reference's eager and torch.compile times), one process per candidate,
# with fresh build and compile caches, except that the Triton candidate's Triton cache is the one
# our warm run filled (KernelBench's "warm Triton"). Wall time is the whole process, start to exit.
#
# Environment: OPENKERNEL_BIN (default .device/bin/openkernel), OPENKERNEL_KERNELBENCH_DIR (the
# problems, default .device/kernelbench), KERNELBENCH_SRC (a KernelBench checkout, default
# .device/kernelbench-src; never committed), CANDIDATES and KB_CANDIDATES (names in
# tests/gpu/candidates, backend after a colon), KB_TIMEOUT (s per KernelBench run, default 170),
# OURS_TIMEOUT (default 120), OPENKERNEL_EVAL_FLAGS (e.g. --no-sandbox).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/openkernel-gpu}
mkdir -p "$OUT"
BIN=${OPENKERNEL_BIN:-$PWD/.device/bin/openkernel}
KB=${OPENKERNEL_KERNELBENCH_DIR:-$PWD/.device/kernelbench}
KBSRC=${KERNELBENCH_SRC:-$PWD/.device/kernelbench-src}
CANDIDATES=${CANDIDATES:-"relu_triton:triton relu_nvcc:cuda relu_cuda:cuda"}
KB_CANDIDATES=${KB_CANDIDATES:-"relu_triton:triton relu_cuda:cuda relu_nvcc:cuda"}
KB=$(cd "$KB" 2>/dev/null && pwd || echo "$KB")
KBSRC=$(cd "$KBSRC" 2>/dev/null && pwd || echo "$KBSRC")
REF=$KB/level1/19_ReLU.py
PY=${PYTHON:-python3}
work=$(mktemp -d /tmp/ok-sbs.XXXXXX)
tsv=$OUT/side_by_side.tsv
printf 'harness\tcandidate\tcaches\tverdict\twall_s\tcand_ms\tref_ms\tdetail\n' > "$tsv"

now() { date +%s.%N; }
elapsed() { "$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }

ours() {  # name backend caches(cold|warm) cache_root
  local name=$1 backend=$2 caches=$3 root=$4 t0 t1 rc
  t0=$(now)
  XDG_CACHE_HOME=$root timeout -k 5 "${OURS_TIMEOUT:-120}" "$BIN" evaluate --level 1 --problem 19 \
    --kernelbench-dir "$KB" --backend "$backend" --candidate "tests/gpu/candidates/$name.py" \
    ${OPENKERNEL_EVAL_FLAGS:-} --json --db "$work/ours.db" > "$work/ours_${name}_$caches.json" \
    2> "$work/ours_${name}_$caches.err"
  rc=$?
  t1=$(now)
  "$PY" - "$work/ours_${name}_$caches.json" "$name" "$caches" "$rc" "$(elapsed "$t0" "$t1")" >> "$tsv" <<'PY'
import json, sys
path, name, caches, rc, wall = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception:
    print(f"openkernel\t{name}\t{caches}\texit {rc}\t{wall}\t\t\t")
    sys.exit()
ms = lambda s: "" if not s or s.get("median") is None else f"{s['median'] / 1e3:.3f}"
detail = f"speedup {r['speedup']:.3f}" if r.get("speedup") else "; ".join(r.get("reasons", []))[:120]
detail += f"; compile_s {r.get('compile_s') or 0:.1f}; timing {(r.get('timing') or {}).get('mode')}"
print(f"openkernel\t{name}\t{caches}\t{r['verdict']}\t{wall}\t{ms(r.get('runtime_us'))}\t"
      f"{ms(r.get('ref_runtime_us'))}\t{detail}")
PY
  tail -1 "$tsv"
}

kernelbench() {  # name backend caches triton_cache
  local name=$1 backend=$2 caches=$3 tcache=$4 t0 t1 rc dir=$work/kb_$name
  mkdir -p "$dir"
  t0=$(now)
  (cd "$dir" && TORCH_EXTENSIONS_DIR=$dir/torch_extensions TRITON_CACHE_DIR=$tcache \
     OPENKERNEL_NATIVE_CACHE=$dir/native PYTHONPATH=$OLDPWD/python \
     timeout -k 5 "${KB_TIMEOUT:-170}" "$PY" "$OLDPWD/bench/kernelbench_driver.py" --kb-src "$KBSRC" \
       --reference "$REF" --candidate "$OLDPWD/tests/gpu/candidates/$name.py" --backend "$backend" \
       --build-dir "$dir/build" > "$dir/out.log" 2> "$dir/err.log")
  rc=$?
  t1=$(now)
  "$PY" - "$dir/out.log" "$name" "$caches" "$rc" "$(elapsed "$t0" "$t1")" >> "$tsv" <<'PY'
import json, sys
path, name, caches, rc, wall = sys.argv[1:]
r = None
for line in open(path, errors="replace"):
    if line.startswith("{"):
        try:
            r = json.loads(line)
        except ValueError:
            pass
if r is None:
    print(f"kernelbench\t{name}\t{caches}\texit {rc}\t{wall}\t\t\t")
    sys.exit()
verdict = "correct" if r.get("correctness") else ("incorrect" if r.get("compiled") else "compile_error")
if "error" in r:
    verdict = "error"
f = lambda v: "" if v in (None, -1.0) else f"{v:.3f}"
p = r.get("phases", {})
detail = (f"static_check {'ok' if r['static_check']['ok'] else 'FAILED ' + ';'.join(r['static_check']['errors'])}; "
          f"eval {p.get('eval_kernel_against_ref_s', 0):.1f}s, ref eager {p.get('ref_eager_s', 0):.1f}s, "
          f"ref compile {p.get('ref_compile_s', 0):.1f}s (ref compile {f(r.get('ref_compile_ms'))} ms)")
print(f"kernelbench\t{name}\t{caches}\t{verdict}\t{wall}\t{f(r.get('runtime_ms'))}\t"
      f"{f(r.get('ref_eager_ms'))}\t{detail}")
PY
  tail -1 "$tsv"
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1
for c in $CANDIDATES; do
  IFS=: read -r name backend <<<"$c"
  root=$work/cache_$name
  ours "$name" "$backend" cold "$root"
  ours "$name" "$backend" warm "$root"
done
# Ours in the warm worker `optimize` keeps (bench/warm_worker.py): each candidate a new source
# every time (--unique), so Triton and nvcc compile each from scratch; pass 1 is the worker's
# first evaluation (a fresh candidate process, the bandwidth floor measured once).
if [ -n "${WORKER_CANDIDATES:-relu_triton relu_nvcc}" ]; then
  args=()
  for name in ${WORKER_CANDIDATES:-relu_triton relu_nvcc}; do
    args+=(--candidate "tests/gpu/candidates/$name.py")
  done
  "$PY" bench/warm_worker.py --reference "$REF" --backend cuda "${args[@]}" \
    --repeat "${WORKER_REPEAT:-4}" --unique --cache-dir "$work/worker_cache" \
    --json "$work/worker.json" > "$work/worker.txt" 2>&1
  "$PY" - "$work/worker.json" >> "$tsv" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"openkernel-worker\t-\t-\tfailed: {e}\t\t\t\t")
    sys.exit()
for i, r in enumerate(d["rows"]):
    caches = "new source, worker's first" if i == 0 else "new source, warm worker"
    name = r["candidate"].rsplit(".", 1)[0]
    ph = r.get("phases_s") or {}
    detail = (f"speedup {r['speedup']:.3f}; " if r.get("speedup") else "") + \
        f"process {r.get('process')}; " + ", ".join(f"{k} {v:.2f}" for k, v in ph.items() if v >= 0.05)
    print(f"openkernel-worker\t{name}\t{caches}\t{r['verdict']}\t{r['wall_s']:.1f}\t\t\t{detail}")
PY
  cat "$work/worker.txt"
fi
if [ -d "$KBSRC/src/kernelbench" ]; then
  for c in $KB_CANDIDATES; do
    IFS=: read -r name backend <<<"$c"
    tcache=$work/kb_${name}_triton caches=cold
    # Triton: the cache our warm run of the same candidate left (openkernel's cache layout).
    for d in "$work/cache_$name/openkernel/triton" "$work/cache_$name/triton"; do
      [ "$backend" = triton ] && [ -d "$d" ] && { tcache=$d; caches=warm-triton; break; }
    done
    kernelbench "$name" "$backend" "$caches" "$tcache"
  done
else
  echo "no KernelBench source at $KBSRC (fetch github:ScalingIntelligence/KernelBench, see scripts/bundle-device.sh)"
fi
"$PY" - "$tsv" > "$OUT/side_by_side.md" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1]), delimiter="\t"))
print("| " + " | ".join(rows[0]) + " |")
print("|" + " --- |" * len(rows[0]))
for r in rows[1:]:
    print("| " + " | ".join(c.replace("|", "/") for c in r) + " |")
PY
cat "$OUT/side_by_side.md"
