#!/usr/bin/env bash
# The honest corpus (tests/honest) on the GPU: every GPU case through `openkernel evaluate --json`
# must end `correct` with no rejecting flag. Each step is time-boxed (`timeout`, its whole process
# group) and each evaluation has its own limit (OPENKERNEL_HONEST_CASE_LIMIT_S, default 420 s for a
# load_inline candidate, 240 s otherwise), so one hang cannot eat the run.
# Limits (a fresh machine: empty nvcc, Triton and torch caches; a cold load_inline CUDA build is
# about 55 s there, a CLI evaluation about 20 s):
#   1. probe    sandbox probe                                              (15 s)
#   1b. prewarm every load_inline extension built at once through the CLI (verdicts kept apart in
#               $OUT/prewarm/<case>.json and .err, not counted),
#               so the counted evaluations below hit the build cache          (240 s)
#   2. direct   every GPU case without the engine, 8 at a time (builds in parallel): tells a
#               wrong kernel from a wrong verdict                          (300 s)
#   3. triton   the Triton cases (7 evaluations)                           (300 s)
#   4. cuda_a   legacy stream, AT_DISPATCH (fp32/fp16/bf16), PTX (3 builds, 5 evaluations) (540 s)
#   5. cuda_b   int64 gather, bf16, conv epilogue, shared-memory softmax (4 builds, 4 evaluations)
#                                                                          (540 s)
# The limits add up to more than the `device` tool's 10 minutes a command: pick STEPS so that one
# call stays under them, e.g. STEPS="probe direct triton", then STEPS="probe cuda_a", then
# STEPS="probe cuda_b" (on a machine still warm the compile cache, OPENKERNEL_HONEST_CACHE, is kept).
# Run from the repo root after building (build/release) and scripts/bundle-device.sh; the GPU
# machine needs only python3 with torch and triton (bwrap, the engine and its libraries come in
# .device). Results in $OUT: log.txt, steps.tsv (step, rc, seconds), honest.tsv (case, verdict,
# flags, timing mode, speedup, seconds, reasons; appended by every evaluation step), <case>.json
# and <case>.err (the CLI's output), direct.tsv, pytest_<step>.txt.
# STEPS="probe direct prewarm triton cuda_a cuda_b" selects steps (default: all of them);
# HONEST_K="softmax_shared" narrows the evaluation steps to the cases pytest's -k selects.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/openkernel-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache PYTHONUNBUFFERED=1
export OPENKERNEL_BIN=${OPENKERNEL_BIN:-$PWD/.device/bin/openkernel}
export OPENKERNEL_BWRAP=${OPENKERNEL_BWRAP:-$PWD/.device/bin/bwrap}
export OPENKERNEL_PYTHON=${OPENKERNEL_PYTHON:-$(command -v python3)}
export OPENKERNEL_HONEST_OUT=$OUT OPENKERNEL_HONEST_CACHE=${OPENKERNEL_HONEST_CACHE:-/tmp/okhonest}
export OUT
STEPS=${STEPS:-probe direct prewarm triton cuda_a cuda_b}
mkdir -p "$OPENKERNEL_HONEST_CACHE"
[ -f "$OUT/steps.tsv" ] || printf 'step\trc\tseconds\n' > "$OUT/steps.tsv"

step() {  # name limit_s shell-command (functions below are exported)
  local name=$1 limit=$2 t0 rc
  case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
  echo "== $name (limit ${limit}s) =="
  t0=$(date +%s)
  timeout -k 10 "$limit" bash -c "$3"
  rc=$?
  [ "$rc" = 124 ] && echo "!! $name: timed out after ${limit}s"
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$OUT/steps.tsv"
  return "$rc"
}

probe() {
  PYTHONPATH=python python3 -c "
import sys
from openkernel_worker import sandbox
p = sandbox.probe('gpu'); print(p); sys.exit(0 if p.ok else 1)"
}

group() {  # one batch of GPU cases through the CLI, one evaluation at a time
  OPENKERNEL_HONEST_GROUPS=$1 python3 -m pytest -q -rs -p no:cacheprovider -m gpu \
    ${HONEST_K:+-k "$HONEST_K"} tests/honest/test_honest.py 2>&1 | tee "$OUT/pytest_$1.txt" | tail -40
  return "${PIPESTATUS[0]}"
}

prewarm() {  # every load_inline case's extension built at once (16 cores), verdicts discarded:
  # the evaluations that count then find their builds in the shared cache and run one at a time
  python3 - <<'PY'
import os, subprocess, sys
sys.path.insert(0, "tests/honest")
from honest_cases import CASES, HERE
seen, procs = set(), []
for name, case in CASES.items():
    if not case.gpu or case.candidate in seen or "load_inline(" not in (HERE / case.candidate).read_text():
        continue
    seen.add(case.candidate)
    env = dict(os.environ, XDG_CACHE_HOME=os.environ["OPENKERNEL_HONEST_CACHE"],
               XDG_DATA_HOME=f"/tmp/okprewarm/{name}", XDG_CONFIG_HOME=f"/tmp/okprewarm/{name}")
    args = [os.environ["OPENKERNEL_BIN"], "evaluate", "--reference", str(HERE / case.reference),
            "--candidate", str(HERE / case.candidate), "--backend", case.backend, "--trials", "1",
            "--timing-budget", "0.1", "--timeout", "400", "--db", f"/tmp/okprewarm/{name}.db"]
    if os.environ.get("OPENKERNEL_NO_SANDBOX") == "1":
        args.append("--no-sandbox")
    os.makedirs(f"/tmp/okprewarm/{name}", exist_ok=True)
    os.makedirs(os.path.join(os.environ["OUT"], "prewarm"), exist_ok=True)
    stem = os.path.join(os.environ["OUT"], "prewarm", name)
    procs.append((name, subprocess.Popen(args, env=env, stdout=open(stem + ".json", "w"),
                                         stderr=open(stem + ".err", "w"))))
for name, p in procs:
    print(name, "prewarm rc", p.wait(), flush=True)
PY
}

export -f probe group prewarm
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  [ -x "$OPENKERNEL_BIN" ] || echo "!! no engine at $OPENKERNEL_BIN: run scripts/bundle-device.sh first"
  case " $STEPS " in
    *" probe "*)
      if step probe 15 probe; then
        echo "sandbox: on"
      else
        echo "sandbox: UNAVAILABLE here, running with --no-sandbox"
        export OPENKERNEL_NO_SANDBOX=1
      fi ;;
  esac
  step direct 300 'PYTHONPATH=python python3 tests/honest/direct_check.py --jobs 8 --timeout 280 --out "$OUT/direct.tsv"'
  step prewarm 240 prewarm
  step triton 300 "group triton"
  step cuda_a 540 "group cuda_a"
  step cuda_b 540 "group cuda_b"
  echo "== steps =="
  cat "$OUT/steps.tsv"
  echo "== honest.tsv =="
  cat "$OUT/honest.tsv" 2>/dev/null
} >> "$OUT/log.txt" 2>&1
tail -60 "$OUT/log.txt"
