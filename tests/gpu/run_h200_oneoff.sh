#!/usr/bin/env bash
# GPU run: how long a one-off `openkernel evaluate` takes (a new engine, worker and candidate
# process each time), and where the time goes (phases_s, the candidate process's start-up steps
# and whether it started with the worker, before the request (`boot`), the worker's own start-up
# (worker_start_s: seconds since its process began), the physical floor's bandwidth: measured, or
# cached behind a spot check). Three runs each of
# tests/gpu/candidates/relu_triton.py on KernelBench level1/19_ReLU (full size) and on the small
# ReLU of tests/adversarial/gpu/ref_relu_small.py. Run 1 of each starts with empty caches
# (Triton compiles, the bandwidth is measured); runs 2-3 find both cached. Target: <= 10 s.
# From the repo root on the GPU machine after scripts/bundle-device.sh; results go to $OUT.
#   tests/gpu/run_h200_oneoff.sh
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
BIN=.device/bin/openkernel
KB=.device/kernelbench
C=tests/gpu/candidates
TSV=$OUT/oneoff.tsv
printf 'problem\trun\twall_s\tworker_wall_s\tverdict\tprocess\tbandwidth\tbandwidth_s\tphases_s\tprocess_warm_s\tworker_start_s\n' > "$TSV"
for problem in level1_19:"--level 1 --problem 19 --kernelbench-dir $KB" \
               relu_small:"--reference tests/adversarial/gpu/ref_relu_small.py"; do
  name=${problem%%:*}
  read -r -a args <<<"${problem#*:}"
  root=$(mktemp -d /tmp/okoneoff.XXXXXX)  # its own caches: run 1 is cold
  for run in 1 2 3; do
    t0=$(date +%s.%N)
    XDG_CACHE_HOME=$root/cache $BIN evaluate "${args[@]}" --backend triton \
      --candidate $C/relu_triton.py --json --db "$root/db" > "$root/$run.json" 2> "$root/$run.err"
    t1=$(date +%s.%N)
    python3 - "$root/$run.json" "$name" "$run" "$t0" "$t1" "$TSV" <<'PY'
import json, sys
path, name, run, t0, t1, tsv = sys.argv[1:]
wall = float(t1) - float(t0)
try:
    r = json.load(open(path))
except Exception as e:  # noqa: BLE001
    print(f"{name} run {run}: no result ({e}); see {path.replace('.json', '.err')}")
    sys.exit(0)
roof = r.get("roofline") or {}
row = [name, run, f"{wall:.2f}", f"{r.get('worker_wall_s', 0):.2f}", r["verdict"],
       r.get("candidate_process"), roof.get("bandwidth_source"), roof.get("bandwidth_s"),
       json.dumps(r.get("phases_s")), json.dumps(r.get("process_warm_s")),
       json.dumps(r.get("worker_start_s"))]
print("\t".join(str(x) for x in row))
if roof.get("bandwidth_note"):
    print(f"  bandwidth note: {roof['bandwidth_note']}")
with open(tsv, "a") as f:
    f.write("\t".join(str(x) for x in row) + "\n")
PY
  done
done
echo "oneoff rc 0 (table in $TSV)"
