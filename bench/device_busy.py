"""Device utilisation of `openkernel optimize` against a slow model, for several --in-flight K.

The search orchestrator keeps K generations in flight while its one evaluator (the "device")
evaluates candidates one at a time, in issue order. This bench points optimize (CPU backend) at
tests/integration/llm_stub.py, a local OpenAI-compatible server whose every reply (generator and
critic alike) is delayed by --latency seconds. The generator always answers with one fixed,
correct candidate (default examples/swish_chain/candidate.py), the critic with a valid diagnosis,
so every attempt costs about the same evaluation time and only K changes between runs.

    python3 bench/device_busy.py                        # K = 1, 4, 8; 12 iterations each
    python3 bench/device_busy.py --in-flight 1,2,4 --iterations 8 --latency 20 --json-out rows.json

Before the runs it calibrates: one short optimize run with no latency (2 iterations, K=1) gives
one evaluation's wall time inside optimize, eval_s = device_busy_s / evaluations (a standalone
`openkernel evaluate` is slower: it also pays process and worker start and the reference's
timing). Unless --latency is given, latency = 2 x eval_s, so that K * eval_s > latency + eval_s
holds at K >= 4 but not at K = 1 (but see below: the critic's reply moves that line).

Output: one row per K (and --json-out FILE writes the rows as a JSON list):
  in_flight             K, passed as --in-flight
  iterations            --iterations of the run; evaluations: how many the search made
  latency_s             the stub's delay per reply
  wall_s                wall seconds of the search loop (report["search"]["wall_s"])
  device_busy_s         seconds the evaluator spent evaluating
  device_busy_fraction  device_busy_s / wall_s: evaluation seconds over search-loop seconds
  steady_busy_fraction  device_busy_s over the span from the first generator reply to the last
                        evaluation's end (the start of the last critic request): the same
                        fraction without the warm-up and drain below
  max_gen_overlap       the most generator requests the stub had open at one time

How to read it. The target is a busy fraction >= 0.9 once proposals outpace evaluation, i.e. once
a finished generation is always waiting when the evaluator frees up. The evaluator runs on its
own thread, so the loop learns from diagnoses and issues generations while it evaluates. Still:
  * Generation n+K is issued once attempts 1..n are diagnosed (that keeps the search
    deterministic), so an attempt holds its slot for generation latency + evaluation + critic
    latency. Proposals outpace evaluation once K * eval_s > 2 * latency + eval_s (K >= 5 with the
    defaults); below that the fraction is about K * eval_s / (2 * latency + eval_s).
  * wall_s includes the first generation (latency, nothing to evaluate yet) and the last
    attempt's critic call (latency, nothing left to evaluate): 2 x latency of idle device per
    run, so device_busy_fraction <= N * eval_s / (N * eval_s + 2 * latency) at any K.
    steady_busy_fraction leaves those out and is the one to hold to >= 0.9 at large K (or raise
    --iterations).
At K = 1 each attempt waits for its generation and its diagnosis: about
eval_s / (eval_s + 2 * latency). Each run's optimize stderr (the "[n/N] generating" /
"[n/N] evaluating" / "[n] verdict" lines) is kept under --log-dir to see where the evaluator
waited.

Exit status: 0 on success, 1 when a run fails, 2 on bad flags or a missing binary/file.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--trials", "2", "--timing-budget", "0.3", "--timeout", "120"]
DIAGNOSIS = json.dumps({"bottleneck": "memory",
                        "evidence": ["an elementwise chain: one read and one write per element"],
                        "suggestions": [{"action": "vectorise the loop and keep it fused",
                                         "expected_gain": 0.1}],
                        "expected_gain": 0.1})


def load_stub() -> Any:
    path = ROOT / "tests/integration/llm_stub.py"
    spec = importlib.util.spec_from_file_location("llm_stub", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"device_busy: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LlmStub


def usage_error(message: str) -> NoReturn:
    print(f"device_busy: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--in-flight", default="1,4,8", help="comma-separated K values (default 1,4,8)")
    ap.add_argument("--iterations", type=int, default=12, help="attempts per run (default 12)")
    ap.add_argument("--latency", type=float, default=None,
                    help="seconds per model reply (default: 2 x the calibrated evaluation time)")
    ap.add_argument("--json-out", metavar="FILE", help="also write the rows as JSON to FILE")
    ap.add_argument("--log-dir", help="where each run's optimize stderr goes (default: a new "
                                      "temporary folder, printed)")
    ap.add_argument("--binary", default=os.environ.get("OPENKERNEL_BIN")
                    or str(ROOT / "build/release/bin/openkernel"))
    ap.add_argument("--python", default=os.environ.get("OPENKERNEL_PYTHON") or "/usr/bin/python3",
                    help="Python with torch for the worker (default /usr/bin/python3)")
    ap.add_argument("--reference", default=str(ROOT / "examples/swish_chain/reference.py"))
    ap.add_argument("--candidate", default=str(ROOT / "examples/swish_chain/candidate.py"),
                    help="the generator's fixed reply: a correct KernelBench ModelNew file")
    a = ap.parse_args(argv)
    try:
        a.ks = [int(k) for k in a.in_flight.split(",") if k.strip()]
    except ValueError:
        usage_error(f"--in-flight wants comma-separated integers, got {a.in_flight!r}")
    if not a.ks or any(k < 1 for k in a.ks):
        usage_error(f"--in-flight wants integers >= 1, got {a.in_flight!r}")
    if a.iterations < 1:
        usage_error(f"--iterations must be >= 1, got {a.iterations}")
    if a.latency is not None and not (a.latency >= 0):
        usage_error(f"--latency must be >= 0 seconds, got {a.latency}")
    binary = Path(a.binary)
    if not binary.is_file() or not os.access(binary, os.X_OK):
        usage_error(f"no openkernel binary at {binary} (build it, or pass --binary or set "
                    "OPENKERNEL_BIN)")
    for flag, value in (("--reference", a.reference), ("--candidate", a.candidate)):
        if not Path(value).is_file():
            usage_error(f"{flag}: no such file {value}")
    if "class ModelNew" not in Path(a.candidate).read_text():
        usage_error(f"--candidate {a.candidate} defines no class ModelNew")
    return a


def run_optimize(a: argparse.Namespace, stub_cls: Any, k: int, iterations: int, latency: float,
                 log: Path) -> dict[str, Any]:
    """One optimize run against a fresh stub; returns report["search"] plus the stub's overlap."""
    reply = "One fused loop, vectorised.\n```python\n" + Path(a.candidate).read_text() + "\n```\n"
    with tempfile.TemporaryDirectory(prefix="device_busy.") as tmp_s:
        tmp = Path(tmp_s)
        env = {**os.environ, "OPENKERNEL_PYTHON": a.python,
               "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_CACHE_HOME": str(tmp / "cache"),
               "XDG_DATA_HOME": str(tmp / "data")}
        env.pop("OPENKERNEL_API_KEY", None)
        with stub_cls(generator=[reply], critic=[DIAGNOSIS], latency_s=latency) as stub:
            cmd = [a.binary, "optimize", "--db", str(tmp / "db.sqlite"), "--reference",
                   a.reference, "--backend", "cpu", "--model", "openai/stub-model", "--base-url",
                   stub.base_url, "--iterations", str(iterations), "--in-flight", str(k),
                   "--json", "--out", str(tmp / "out"), *QUICK]
            limit = 300 + iterations * (120 + 2 * latency)
            t0 = time.monotonic()
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=limit)
            except subprocess.TimeoutExpired as e:
                log.write_text((e.stderr or b"").decode() if isinstance(e.stderr, bytes)
                               else (e.stderr or ""))
                raise RuntimeError(f"K={k}: optimize ran past {limit:.0f} s; stderr in {log}")
            elapsed = time.monotonic() - t0
            timeline = list(stub.timeline)
        log.write_text(p.stderr)
        lines = [line for line in p.stdout.splitlines() if line.strip()]
        report = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
        if p.returncode != 0 or report is None or "search" not in report:
            raise RuntimeError(f"K={k}: optimize exited {p.returncode} without a report with "
                               f"'search'; stderr in {log}:\n{p.stderr[-2000:]}")
        wrong = [h["verdict"] for h in report.get("history", []) if h.get("verdict") != "correct"]
        if wrong:
            print(f"device_busy: warning: K={k}: attempts not correct: {wrong} (see {log})",
                  file=sys.stderr)
    search = report["search"]
    return {"in_flight": k, "iterations": iterations, "evaluations": search.get("evaluations"),
            "latency_s": latency, "wall_s": search["wall_s"],
            "device_busy_s": search["device_busy_s"],
            "device_busy_fraction": search["device_busy_fraction"],
            "reported_in_flight": search.get("in_flight"),
            "max_gen_overlap": max_overlap([(s, e) for p_, s, e in timeline
                                            if p_ == "generator"]),
            "steady_busy_fraction": steady_fraction(timeline, search["device_busy_s"]),
            "process_wall_s": elapsed}


def steady_fraction(timeline: list[tuple[str, float, float]], busy_s: float) -> float | None:
    """device_busy_s over the span from the first generator reply (the first candidate can
    arrive) to the start of the last critic request (the last evaluation's end): the busy
    fraction without the warm-up and drain every run pays. None without both ends."""
    gens = [e for p, _, e in timeline if p == "generator"]
    critics = [s for p, s, _ in timeline if p == "critic"]
    if not gens or not critics or max(critics) <= min(gens):
        return None
    return busy_s / (max(critics) - min(gens))


def binary_stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


def max_overlap(spans: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans],
                    key=lambda x: (x[0], x[1]))  # an end before a start at the same instant
    best = cur = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


COLUMNS = [("in_flight", "{}"), ("iterations", "{}"), ("evaluations", "{}"),
           ("latency_s", "{:.2f}"), ("wall_s", "{:.2f}"), ("device_busy_s", "{:.2f}"),
           ("device_busy_fraction", "{:.3f}"), ("steady_busy_fraction", "{:.3f}"),
           ("max_gen_overlap", "{}")]


def print_table(rows: list[dict[str, Any]]) -> None:
    cells = [[name for name, _ in COLUMNS]]
    cells += [[fmt.format(r[name]) if r.get(name) is not None else "-" for name, fmt in COLUMNS]
              for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    for row in cells:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)), flush=True)


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    stub_cls = load_stub()
    log_dir = Path(a.log_dir) if a.log_dir else Path(tempfile.mkdtemp(prefix="device_busy_logs."))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"device_busy: optimize stderr goes to {log_dir}", file=sys.stderr)
    try:
        latency = a.latency
        if latency is None:
            cal = run_optimize(a, stub_cls, 1, 2, 0.0, log_dir / "calibrate.log")
            eval_s = cal["device_busy_s"] / max(1, cal["evaluations"] or 1)
            latency = round(2 * eval_s, 1)
            print(f"device_busy: one evaluation takes {eval_s:.2f} s inside optimize "
                  f"(calibration, 2 attempts); latency = 2 x that = {latency:.1f} s",
                  file=sys.stderr)
        rows = []
        built = binary_stamp(a.binary)
        for k in a.ks:
            print(f"device_busy: K={k}, {a.iterations} iterations, latency {latency:.1f} s ...",
                  file=sys.stderr, flush=True)
            rows.append(run_optimize(a, stub_cls, k, a.iterations, latency,
                                     log_dir / f"optimize_k{k}.log"))
            if binary_stamp(a.binary) != built:  # rows from two builds do not compare
                print(f"device_busy: warning: {a.binary} was rebuilt during the K={k} run; "
                      "rerun for a table from one build", file=sys.stderr)
                built = binary_stamp(a.binary)
    except RuntimeError as e:
        print(f"device_busy: {e}", file=sys.stderr)
        return 1
    print_table(rows)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
