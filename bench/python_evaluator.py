"""N new candidates through the Python API's warm `Evaluator.evaluate_many` beside the CLI (one
`openkernel evaluate` per candidate, a fresh worker each), on the same reference and settings:
what an RL trainer gains by keeping the evaluator in its process (docs/python.md).

    /usr/bin/python3 bench/python_evaluator.py [--n 20] [--backend triton] \
        [--reference REF.py | --level L --problem P --kernelbench-dir DIR] [--candidate C.py] \
        [--trials 5] [--timing-budget 4] [--cli-n N] [--ratios-only] [--out FILE]

Each of the N candidates is a new copy of --candidate (bench/warm_worker.py's unique_copy: a
comment in every @triton.jit body and before every __global__ line, so Triton and nvcc compile it
again, and one at the end so every source differs), evaluated once by each side, the CLI first.
Default: the bundled example (examples/swish_chain). Prints each side's seconds per candidate
(the mean and median of the wall time around each call; for the API also the evaluator's start,
which the CLI pays per candidate) and their ratios; --ratios-only prints only the ratios (the
form committed for machines whose absolute times mean nothing, e.g. a shared 2-core CPU box).
The H200 target: at most 5 s per new Triton candidate through evaluate_many.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, os.environ.get("OPENKERNEL_PYTHON_API") or str(ROOT / "build/release/python"))

import openkernel  # noqa: E402
from warm_worker import unique_copy  # noqa: E402

BINARY = Path(os.environ.get("OPENKERNEL_BIN") or ROOT / "build/release/bin/openkernel")


def candidates(template: str, n: int, folder: str) -> List[str]:
    os.makedirs(folder, exist_ok=True)
    out = []
    for i in range(n):
        path = unique_copy(template, i, folder)
        with open(path, "a") as f:
            f.write(f"\n# openkernel bench candidate {i}\n")
        out.append(path)
    return out


def problem_args(a: argparse.Namespace) -> Dict[str, Any]:
    if a.reference:
        return {"reference": a.reference}
    return {"level": a.level, "problem": a.problem, "kernelbench_dir": a.kernelbench_dir}


def cli_side(a: argparse.Namespace, paths: List[str], db: str) -> List[Dict[str, Any]]:
    rows = []
    p = problem_args(a)
    flags = (["--reference", p["reference"]] if "reference" in p else
             ["--level", str(p["level"]), "--problem", str(p["problem"])] +
             (["--kernelbench-dir", p["kernelbench_dir"]] if p["kernelbench_dir"] else []))
    for path in paths:
        args = [str(BINARY), "evaluate", *flags, "--candidate", path, "--json", "--db", db,
                "--trials", str(a.trials), "--timing-budget", str(a.timing_budget)]
        if a.backend:
            args += ["--backend", a.backend]
        t0 = time.monotonic()
        run = subprocess.run(args, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if run.returncode != 0:
            raise SystemExit(f"python_evaluator: the CLI failed: {run.stderr}")
        rows.append({"wall_s": wall, "verdict": json.loads(run.stdout)["verdict"]})
    return rows


def api_side(a: argparse.Namespace, paths: List[str], db: str) -> Dict[str, Any]:
    t0 = time.monotonic()
    ev = openkernel.Evaluator(backend=a.backend, db=db, trials=a.trials,
                              timing_budget=a.timing_budget)
    start = time.monotonic() - t0
    rows = []
    with ev:
        p = problem_args(a)
        for path in paths:  # evaluate_many one at a time, to time each call
            t1 = time.monotonic()
            r = ev.evaluate_many([path], **p)[0]
            rows.append({"wall_s": time.monotonic() - t1, "verdict": r.verdict,
                         "process": r.candidate_process})
    return {"start_s": start, "rows": rows}


def summary(walls: List[float]) -> Dict[str, float]:
    return {"mean": statistics.mean(walls), "median": statistics.median(walls)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--backend", default=None)
    ap.add_argument("--reference", default=None)
    ap.add_argument("--level", type=int)
    ap.add_argument("--problem", type=int)
    ap.add_argument("--kernelbench-dir", default=None)
    ap.add_argument("--candidate", default=str(ROOT / "examples/swish_chain/candidate.py"))
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--timing-budget", type=float, default=4.0)
    ap.add_argument("--cli-n", type=int, default=None,
                    help="CLI evaluations to time (default --n; fewer on a GPU lease, where each "
                    "costs a fresh worker: the CLI's per-candidate mean then stands for all n)")
    ap.add_argument("--ratios-only", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if not a.reference and not a.level:
        a.reference = str(ROOT / "examples/swish_chain/reference.py")
    with tempfile.TemporaryDirectory(prefix="openkernel-bench-") as tmp:
        cli_n = a.n if a.cli_n is None else max(1, min(a.cli_n, a.n))
        cli_paths = candidates(a.candidate, cli_n, os.path.join(tmp, "cli"))
        api_paths = candidates(a.candidate, a.n, os.path.join(tmp, "api"))
        cli = cli_side(a, cli_paths, os.path.join(tmp, "cli.db"))
        api = api_side(a, api_paths, os.path.join(tmp, "api.db"))
    c = summary([r["wall_s"] for r in cli])
    p = summary([r["wall_s"] for r in api["rows"]])
    verdicts = sorted({r["verdict"] for r in cli} | {r["verdict"] for r in api["rows"]})
    spare = sum(r["process"] == "spare" for r in api["rows"])
    lines = [f"python_evaluator: {a.n} new candidates ({Path(a.candidate).name}), backend "
             f"{a.backend or 'default'}, trials {a.trials}, timing budget {a.timing_budget} s; "
             f"CLI timed on {len(cli)} of them; "
             f"verdicts {', '.join(verdicts)}; API candidates in a spare process: {spare}/{a.n}"]
    if not a.ratios_only:
        lines += [f"CLI  s/candidate: mean {c['mean']:.2f}  median {c['median']:.2f}",
                  f"API  s/candidate: mean {p['mean']:.2f}  median {p['median']:.2f}  "
                  f"(evaluator start {api['start_s']:.2f} s, once)"]
    total_api = api["start_s"] + sum(r["wall_s"] for r in api["rows"])
    lines += [f"ratio CLI/API per candidate: mean {c['mean'] / p['mean']:.2f}x  "
              f"median {c['median'] / p['median']:.2f}x",
              f"ratio CLI/API for all {a.n}, the evaluator's start included: "
              f"{c['mean'] * a.n / total_api:.2f}x"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
