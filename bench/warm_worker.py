"""Wall time per candidate in a warm worker: the evaluation worker `optimize` and `sweep` keep
running (`python -m openkernel_worker`, protocol v1), asked to evaluate candidates one after
another, as a session does. Prints a TSV, one row per evaluation, with the worker's phases.

    python3 bench/warm_worker.py --reference REF.py --backend triton \
        --candidate a.py --candidate b.py [--repeat 3] [--cache-dir DIR] [--no-spare] \
        [--set NAME=VALUE ...] [--unique] [--json OUT.json]

The candidates are evaluated in the order given, the list `--repeat` times: with a fresh
--cache-dir the first pass is cold (compiles) and the later ones warm. wall_s is measured here,
from the request's write to the reply's read, like the engine does; phases come from the worker
(`phases_s`, docs/evaluation.md). --no-spare turns off the pre-started candidate processes.
--unique evaluates a new copy of each candidate every time, with a comment naming the evaluation
added to the body of every `@triton.jit` function and before every `__global__` line (CUDA source
in a string), so Triton and nvcc compile it again, as they would a new candidate of a search.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHASES = ("reference", "process_start", "load", "trials", "profile", "quiesce", "timing",
          "graph_timing", "floor", "cleanup")


class Worker:
    def __init__(self, python: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
        t0 = time.monotonic()
        self.proc = subprocess.Popen([python, "-m", "openkernel_worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        hello = self._read()
        if not hello.get("ok"):
            raise SystemExit(f"warm_worker: the worker did not start: {hello}")
        self.start_s = time.monotonic() - t0
        self.next_id = 1

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("warm_worker: the worker exited")
        return json.loads(line)

    def call(self, request: dict) -> dict:
        assert self.proc.stdin is not None
        request = {**request, "id": self.next_id}
        self.next_id += 1
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            self.call({"op": "shutdown"})
        except (SystemExit, BrokenPipeError, ValueError):
            pass
        self.proc.wait(timeout=30)


def unique_copy(path: str, n: int, folder: str) -> str:
    """A copy of the candidate whose Triton and CUDA kernels differ from every earlier copy's."""
    with open(path) as f:
        lines = f.read().splitlines(keepends=True)
    out, jit, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if "__global__" in line:
            out.append(f"// openkernel bench variant {n}\n")
        out.append(line)
        if line.lstrip().startswith("@triton.jit"):
            jit = True
        elif jit and line.lstrip().startswith("def "):
            while not lines[i].rstrip().endswith(":"):  # a signature over several lines
                i += 1
                out.append(lines[i])
            indent = len(line) - len(line.lstrip()) + 4
            out.append(" " * indent + f"# openkernel bench variant {n}\n")
            jit = False
        i += 1
    dst = os.path.join(folder, f"v{n}_{os.path.basename(path)}")
    with open(dst, "w") as f:
        f.writelines(out)
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True)
    ap.add_argument("--candidate", action="append", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache-dir")
    ap.add_argument("--no-spare", action="store_true")
    ap.add_argument("--unique", action="store_true",
                    help="a new copy of each candidate every time (Triton compiles again)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--timing-budget", type=float, default=4.0)
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", help="also write every row, with the full phases, to this file")
    args = ap.parse_args()
    overrides = dict(kv.split("=", 1) for kv in args.set)
    worker = Worker(args.python)
    print(f"# worker started in {worker.start_s:.1f} s; spare {'off' if args.no_spare else 'on'}",
          flush=True)
    print("\t".join(["pass", "candidate", "verdict", "wall_s", "process", "speedup"] +
                    list(PHASES)), flush=True)
    rows = []
    copies = tempfile.mkdtemp(prefix="warm_worker.")
    count = 0
    try:
        for n in range(args.repeat):
            for cand in args.candidate:
                count += 1
                path = unique_copy(cand, count, copies) if args.unique else cand
                req = {"op": "evaluate", "reference": os.path.abspath(args.reference),
                       "candidate": os.path.abspath(path), "backend": args.backend,
                       "trials": args.trials, "timing_budget_s": args.timing_budget,
                       "overrides": overrides, "spare": not args.no_spare,
                       "no_sandbox": args.no_sandbox}
                if args.cache_dir:
                    req["cache_dir"] = os.path.abspath(args.cache_dir)
                t0 = time.monotonic()
                reply = worker.call(req)
                wall = time.monotonic() - t0
                if not reply.get("ok"):
                    print(f"# {cand}: {reply.get('error')}", flush=True)
                    continue
                r = reply["result"]
                phases = r.get("phases_s") or {}
                row = {"pass": n + 1, "candidate": os.path.basename(cand), "verdict": r["verdict"],
                       "wall_s": wall, "process": r.get("candidate_process"),
                       "speedup": r.get("speedup"), "phases_s": phases,
                       "process_warm_s": r.get("process_warm_s")}
                rows.append(row)
                sp = f"{r['speedup']:.3f}" if r.get("speedup") else ""
                print("\t".join([str(n + 1), row["candidate"], r["verdict"], f"{wall:.2f}",
                                 str(row["process"]), sp] +
                                [f"{phases[p]:.2f}" if p in phases else "" for p in PHASES]),
                      flush=True)
    finally:
        worker.close()
        shutil.rmtree(copies, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"worker_start_s": worker.start_s, "spare": not args.no_spare,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
