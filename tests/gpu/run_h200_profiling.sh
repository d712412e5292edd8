#!/usr/bin/env bash
# GPU run: the profiling tiers (docs/profiling.md) through the CLI. For the Triton softmax on
# KernelBench level1/23 and the load_inline CUDA ReLU on level1/19: `openkernel evaluate
# --profile deep --json` twice (the second finds the profile cache) and `--profile proton
# --json`; then a separate `ncu --csv --page raw` of the kept report file, so each parsed metric
# can be compared with ncu's own figure (the issue's done-means: equal to the report it was
# parsed from). Prints per run the tier that ran, its flags, seconds and the top kernel's
# metrics; everything lands in $OUT. From the repo root on the GPU machine after
# scripts/bundle-device.sh (ncu from PATH or OPENKERNEL_NCU):
#   OUT=/tmp/okgpu-profiling tests/gpu/run_h200_profiling.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/okgpu-profiling}
mkdir -p "$OUT"
[ -d .device/lib ] && export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -x .device/bin/bwrap ] && export OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
export OPENKERNEL_HOME=$PWD PYTHONUNBUFFERED=1
BIN=${BIN:-.device/bin/openkernel}
[ -x "$BIN" ] || BIN=build/release/bin/openkernel
KB=${KB:-.device/kernelbench}
C=tests/gpu/candidates
ROOT=$(mktemp -d /tmp/okprofiling.XXXXXX)  # its own caches and store: the first deep run is cold
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  command -v ncu && ncu --version | tail -1
  echo "OPENKERNEL_NCU=${OPENKERNEL_NCU:-}"
  for spec in softmax_triton:23:triton relu_cuda:19:cuda; do
    IFS=: read -r cand problem backend <<<"$spec"
    for run in deep-1 deep-2 proton; do
      tier=${run%-*}
      t0=$(date +%s.%N)
      XDG_CACHE_HOME=$ROOT/cache timeout -k 10 580 $BIN evaluate --level 1 --problem "$problem" \
        --kernelbench-dir "$KB" --backend "$backend" --candidate "$C/$cand.py" \
        --profile "$tier" --json --db "$ROOT/db" > "$OUT/$cand.$run.json" 2> "$OUT/$cand.$run.err"
      rc=$?
      t1=$(date +%s.%N)
      python3 - "$OUT/$cand.$run.json" "$OUT/$cand.$run.csv" "$cand" "$problem" "$run" "$rc" \
        "$t0" "$t1" <<'PY'
import json, os, subprocess, sys
path, csv_out, cand, problem, run, rc, t0, t1 = sys.argv[1:]
print(f"== {cand} level1/{problem} {run}: rc {rc}, {float(t1) - float(t0):.1f} s")
try:
    r = json.load(open(path))
except Exception as e:  # noqa: BLE001
    print(f"  no result ({e}); see {path[:-5]}.err")
    sys.exit(0)
p = r.get("profile") or {}
print(f"  verdict {r.get('verdict')}, tier {p.get('tier')} (asked {p.get('requested_tier')}), "
      f"cached {p.get('cached')}, seconds {p.get('seconds')}, tool {json.dumps(p.get('tool'))}")
for f in p.get("flags") or []:
    print(f"  flag {f.get('flag')}: {f.get('message')}")
for k in (p.get("kernel_metrics") or [])[:4]:
    print("  kernel " + json.dumps(k)[:1500])
report = p.get("report_file")
if report:  # ncu's own reading of the same report, for the equality check
    ncu = os.environ.get("OPENKERNEL_NCU") or "ncu"
    raw = subprocess.run([ncu, "--import", report, "--csv", "--page", "raw"],
                         capture_output=True, text=True)
    open(csv_out, "w").write(raw.stdout)
    sys.path.insert(0, "python")
    from openkernel_worker import ncu_report
    again = ncu_report.parse_raw(raw.stdout)
    same = again == p["kernel_metrics"]
    print(f"  report {report}: re-parsed equal to the result's kernel_metrics: {same}")
PY
    done
  done
  echo "profiling rc 0 (results in $OUT, caches in $ROOT)"
} 2>&1 | tee "$OUT/log.txt"
