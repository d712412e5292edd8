#!/usr/bin/env bash
# GPU run: the profiling tiers (docs/profiling.md) through the CLI. For the Triton softmax on
# KernelBench level1/23 and the load_inline CUDA ReLU on level1/19: `openkernel evaluate
# --profile deep --json` twice (the second finds the profile cache) and `--profile proton
# --json`; then `ncu --import` of the kept report file, re-parsed (each metric equal to the
# report it was parsed from), and a separate `ncu --csv` command line on the same forward, outside
# the sandbox (each figure within 5%). Prints per run the tier that ran, its flags, seconds (the
# cost of a deep profile) and the top kernels' metrics; everything lands in $OUT. From the repo
# root on the GPU machine after scripts/bundle-device.sh (ncu from PATH or OPENKERNEL_NCU):
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
  # A separate ncu command line (outside the sandbox and the worker, CSV straight to stdout) on
  # the same forward: each kernel's figures within 5% of the deep tier's (issue 25).
  for spec in softmax_triton:23_Softmax relu_cuda:19_ReLU; do
    IFS=: read -r cand ref <<<"$spec"
    python3 - "$KB/level1/$ref.py" "$C/$cand.py" "$OUT/$cand.deep-1.json" "$OUT/$cand.cli.csv" <<'PY'
import json, os, subprocess, sys, tempfile
sys.path.insert(0, "python")
from openkernel_worker import ncu_report, profile_run
ref, cand, result, csv_out = sys.argv[1:]
try:
    deep = {k["name"]: k for k in json.load(open(result))["profile"]["kernel_metrics"]}
except Exception as e:  # noqa: BLE001
    print(f"== {cand}: no deep result to compare ({e})"); sys.exit(0)
spec = tempfile.mktemp(suffix=".json")
json.dump({"mode": "ncu", "reference": os.path.abspath(ref), "candidate": os.path.abspath(cand),
           "overrides": {}, "init_seed": 1, "seed": 2, "device": "cuda:0", "output": ""},
          open(spec, "w"))
ncu = os.environ.get("OPENKERNEL_NCU") or "ncu"
argv = [ncu, "--csv", "--page", "raw", "--profile-from-start", "off"]
for section in profile_run.SECTIONS:
    argv += ["--section", section]
argv += [sys.executable, "-m", "openkernel_worker.profile_forward", spec]
env = dict(os.environ, PYTHONPATH=os.path.abspath("python"))
r = subprocess.run(argv, capture_output=True, text=True, env=env)
open(csv_out, "w").write(r.stdout + r.stderr)
worst = 0.0
for k in ncu_report.parse_raw(r.stdout):
    d = deep.get(k["name"])
    if d is None:
        print(f"== {cand}: kernel {k['name'][:60]} not in the deep profile"); continue
    for key in ("duration_us", "dram_throughput_pct", "sm_throughput_pct",
                "achieved_occupancy_pct", "registers_per_thread"):
        a, b = d.get(key), k.get(key)
        if a and b:
            off = abs(a - b) / abs(b)
            worst = max(worst, off)
            print(f"   {cand} {k['name'][:40]} {key}: deep {a:.4g} cli {b:.4g} ({off:+.1%})")
print(f"== {cand}: largest difference from a separate ncu run {worst:.1%} "
      f"({'within' if worst <= 0.05 else 'OVER'} 5%)")
PY
  done
  echo "profiling rc 0 (results in $OUT, caches in $ROOT)"
} 2>&1 | tee "$OUT/log.txt"
