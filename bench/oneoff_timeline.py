"""Where a one-off `openkernel evaluate` spends its wall time: the engine's and the worker's
start before the request, the candidate process's start-up, and the evaluation's phases. Runs
the command --runs times and prints one timeline per run (docs/evaluation.md, "Throughput").

    /usr/bin/python3 bench/oneoff_timeline.py --bin build/release/bin/openkernel \
        --reference examples/swish_chain/reference.py \
        --candidate examples/swish_chain/candidate.py --backend cpu [--runs 3] [--json OUT] \
        [-- MORE EVALUATE OPTIONS]

Each row: `outside_s` (the command, measured here), `before_request_s` (outside_s less the
engine's own `wall_s`, which runs from the request's write to the reply's read: the engine's and
the worker's start, plus the few milliseconds of recording after the reply), `worker_start_s`
(the worker's start-up steps, seconds since its process began: reported by workers of this
version in their first evaluation), `load_at_s` (when the candidate's load began, in the same
seconds: the request, then the reference and process_start phases: what the candidate process's
start-up holds up), the candidate process (`fresh`, `spare` or `boot`) with its head start and
own start-up (`process_warm_s`), and `phases_s`. Every run gets its own store in a
temporary folder; the caches (--cache-home, default: a temporary folder per invocation, so run 1
is cold) are kept between runs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def one_run(args: argparse.Namespace, cache_home: str, db: str) -> dict:
    cmd = [args.bin, "evaluate", "--reference", args.reference, "--candidate", args.candidate,
           "--json", "--db", db]
    if args.backend:
        cmd += ["--backend", args.backend]
    cmd += [a for a in args.more if a != "--"]
    env = dict(os.environ, XDG_CACHE_HOME=cache_home)
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    outside = time.monotonic() - t0
    if done.returncode != 0:
        sys.exit(f"exit {done.returncode}: {done.stderr[-2000:]}")
    r = json.loads(done.stdout)
    steps, phases = r.get("worker_start_s") or {}, r.get("phases_s") or {}
    load_at = (steps["request"] + sum(phases.get(k, 0.0) for k in
                                      ("reference", "process_start", "prebuild_wait"))
               if "request" in steps else None)
    return {"load_at_s": round(load_at, 3) if load_at is not None else None,
            "outside_s": round(outside, 3),
            "before_request_s": round(outside - r["wall_s"], 3),
            "wall_s": round(r["wall_s"], 3), "worker_wall_s": round(r["worker_wall_s"], 3),
            "verdict": r["verdict"], "candidate_process": r.get("candidate_process"),
            "worker_start_s": r.get("worker_start_s"),
            "process_warm_s": r.get("process_warm_s"), "phases_s": r.get("phases_s")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--candidate", required=True)
    p.add_argument("--backend", default="")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cache-home", default="")
    p.add_argument("--json", default="")
    p.add_argument("more", nargs=argparse.REMAINDER)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="okoneoff-") as tmp:
        cache_home = args.cache_home or os.path.join(tmp, "cache")
        for run in range(1, args.runs + 1):
            row = one_run(args, cache_home, os.path.join(tmp, f"{run}.db"))
            rows.append(row)
            print(f"run {run}: outside {row['outside_s']} s, before the request "
                  f"{row['before_request_s']} s, worker_wall {row['worker_wall_s']} s, "
                  f"{row['verdict']}, candidate process {row['candidate_process']}, load at "
                  f"{row['load_at_s']} s")
            print(f"  worker_start_s {json.dumps(row['worker_start_s'])}")
            print(f"  process_warm_s {json.dumps(row['process_warm_s'])}")
            print(f"  phases_s {json.dumps(row['phases_s'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
