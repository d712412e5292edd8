"""What `--eval-host` costs per evaluation: N new candidates evaluated locally and N over ssh on the
same reference and settings, alternating, each a fresh `openkernel evaluate` (docs/remote.md).

    /usr/bin/python3 bench/remote_transfer.py --eval-host ssh://gpu1 [--n 10] [--backend cpu] \
        [--reference REF.py] [--candidate C.py] [--python PY] [--remote-python PY] [--out FILE]

Each candidate is a new copy of --candidate (bench/warm_worker.py's unique_copy, so nothing is
reused from a compile cache by content), so every remote run stages its candidate. Prints, per
side, the median engine wall time (`wall_s`), the worker's own time (`worker_wall_s`) and, over
ssh, `phases_s.transfer` (staging the files plus the round trip beyond the worker's time) and the
start-to-exit time of the whole command (which adds the ssh connection and the worker's start);
--out writes the same as JSON. Default: examples/swish_chain on the CPU. A loopback host
measures the mechanism's own overhead; a GPU host across a network adds its latency.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from warm_worker import unique_copy  # noqa: E402

BINARY = Path(os.environ.get("OPENKERNEL_BIN") or ROOT / "build/release/bin/openkernel")


def run(args: argparse.Namespace, candidate: str, db: str, remote: bool) -> dict[str, Any]:
    argv = [str(BINARY), "evaluate", "--db", db, "--reference", args.reference, "--candidate",
            candidate, "--backend", args.backend, "--trials", str(args.trials), "--timing-budget",
            str(args.timing_budget), "--json"]
    python = args.remote_python if remote else args.python
    if python:
        argv += ["--python", python]
    if remote:
        argv += ["--eval-host", args.eval_host]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    command_s = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"evaluate failed ({'remote' if remote else 'local'}): {p.stderr[-2000:]}")
    r = json.loads(p.stdout)
    return {"command_s": command_s, "wall_s": r["wall_s"], "worker_wall_s": r["worker_wall_s"],
            "transfer_s": r["phases_s"].get("transfer"), "verdict": r["verdict"]}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows), "verdicts": sorted({r["verdict"] for r in rows})}
    for key in ("command_s", "wall_s", "worker_wall_s", "transfer_s"):
        values = [r[key] for r in rows if r[key] is not None]
        if values:
            out[f"median_{key}"] = round(statistics.median(values), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-host", required=True)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--reference", default=str(ROOT / "examples/swish_chain/reference.py"))
    ap.add_argument("--candidate", default=str(ROOT / "examples/swish_chain/candidate.py"))
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--timing-budget", type=float, default=0.5)
    ap.add_argument("--python", default="", help="the local worker's Python")
    ap.add_argument("--remote-python", default="", help="the host's Python (default python3)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ok-remote-bench-") as tmp:
        db = os.path.join(tmp, "db.sqlite")
        local, remote = [], []
        for i in range(args.n):
            candidate = unique_copy(args.candidate, i, tmp)
            local.append(run(args, candidate, db, remote=False))
            remote.append(run(args, candidate, db, remote=True))
    result = {"eval_host": args.eval_host, "backend": args.backend,
              "local": summary(local), "remote": summary(remote)}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
