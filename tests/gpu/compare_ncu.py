"""Checks a deep profile (issue 25's done-means, docs/profiling.md): for `openkernel evaluate
--profile deep --json` output, prints each kernel's metrics three ways and checks them:

  ours  the result's profile.kernel_metrics (what the critic and the report read);
  file  `ncu --import <report_file> --csv --page raw` of the .ncu-rep the tier kept, parsed by the
        same parser: every metric must be EQUAL to ours (it was parsed from that file);
  cli   a separate plain `ncu --csv --page raw` command line (outside the worker and its sandbox,
        CSV straight to stdout) around the same one forward (profile_forward, same sections): every
        metric within 5% of ours (relative; both near zero counts as equal).

Plus what the profile cost (the tier's seconds, ncu's profile_s and import_s; the separate run's
wall time). Run on the GPU machine from the repository root (tests/gpu/run_h200_profiling.sh):

    python3 tests/gpu/compare_ncu.py RESULT.json REFERENCE.py CANDIDATE.py [--out PREFIX]

Writes PREFIX.file.csv, PREFIX.cli.csv and PREFIX.compare.json when --out is given; exit 0 when
every check held, 1 when one did not, 2 when nothing could be compared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from openkernel_worker import ncu_report, profile_run  # noqa: E402

TOLERANCE = 0.05
NEAR_ZERO = 1e-9
# A separate command line prints percentages to two decimals ("0" for ncu's 0.000455 in the
# report file): percentages also count as close within 0.01 points.
PCT_POINTS = 0.01


def flat(kernel: dict[str, Any]) -> dict[str, Any]:
    """The kernel's metrics as flat name -> number/text (roofline.flops, stall.long_scoreboard)."""
    out: dict[str, Any] = {}
    for key, value in kernel.items():
        if key in ("id", "missing"):
            continue
        if isinstance(value, dict):
            for sub, v in value.items():
                if isinstance(v, (int, float, str)) or v is None:
                    out[f"{key}.{sub}"] = v
                elif isinstance(v, dict):
                    for s2, v2 in v.items():
                        out[f"{key}.{sub}.{s2}"] = v2
        elif isinstance(value, list) and key == "top_stalls":
            for s in value:
                out[f"stall.{s.get('reason')}"] = s.get("cycles_per_issue")
        elif isinstance(value, list):
            out[key] = json.dumps(value)
        else:
            out[key] = value
    return out


def ncu() -> str:
    return os.environ.get("OPENKERNEL_NCU") or profile_run.find_ncu() or "ncu"


def import_file(report: str) -> str:
    r = subprocess.run([ncu(), "--import", report, "--csv", "--page", "raw"], capture_output=True,
                       text=True, timeout=600)
    return r.stdout + (r.stderr if r.returncode else "")


def separate_run(reference: str, candidate: str, device: str) -> tuple[str, float]:
    """A plain ncu command line around profile_forward's one gated forward: (its output, wall s)."""
    folder = tempfile.mkdtemp(prefix="okcompare-")
    spec = os.path.join(folder, "spec.json")
    with open(spec, "w") as f:
        json.dump({"mode": "ncu", "reference": os.path.abspath(reference),
                   "candidate": os.path.abspath(candidate), "overrides": {}, "init_seed": 1,
                   "seed": 2, "device": device, "output": "",
                   "extensions_dir": os.path.join(folder, "extensions")}, f)
    argv = [ncu(), "--csv", "--page", "raw", "--profile-from-start", "off", "--target-processes",
            "all", "--launch-count", str(profile_run.MAX_KERNELS)]
    for section in profile_run.SECTIONS:
        argv += ["--section", section]
    argv += [sys.executable, "-m", "openkernel_worker.profile_forward", spec]
    python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(python_dir))
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    return r.stdout + (r.stderr if r.returncode else ""), time.monotonic() - t0


def close(a: Any, b: Any, key: str = "") -> bool | None:
    """Within TOLERANCE (relative to the larger; percentages also within PCT_POINTS), equal for
    text; None when either is absent."""
    if a is None or b is None:
        return None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        big = max(abs(a), abs(b))
        if key.endswith("_pct") and abs(a - b) <= PCT_POINTS:
            return True
        return big <= NEAR_ZERO or abs(a - b) / big <= TOLERANCE
    return a == b


def compare(ours: list[dict[str, Any]], file_k: list[dict[str, Any]],
            cli_k: list[dict[str, Any]]) -> dict[str, Any]:
    """Kernel by kernel in launch order (the same forward launches the same kernels)."""
    rows, file_bad, cli_bad, cli_checked = [], 0, 0, 0
    for i, k in enumerate(ours):
        f = flat(file_k[i]) if i < len(file_k) else {}
        c = flat(cli_k[i]) if i < len(cli_k) else {}
        if c and cli_k[i].get("name") != k.get("name"):
            c = {}  # not the same launch: not compared
        for key, value in flat(k).items():
            same_file = f.get(key) == value
            near = close(value, c.get(key), key) if c else None
            file_bad += not same_file
            cli_checked += near is not None
            cli_bad += near is False
            rows.append({"kernel": i, "name": str(k.get("name"))[:60], "metric": key,
                         "ours": value, "file": f.get(key), "cli": c.get(key),
                         "file_equal": same_file, "cli_within_5pct": near})
    return {"rows": rows, "file_mismatches": file_bad, "cli_over_5pct": cli_bad,
            "cli_compared": cli_checked, "kernels": len(ours), "file_kernels": len(file_k),
            "cli_kernels": len(cli_k)}


def fmt(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def report(ours: list[dict[str, Any]], file_k: list[dict[str, Any]],
           cli_k: list[dict[str, Any]]) -> dict[str, Any]:
    c = compare(ours, file_k, cli_k)
    print(f"{'kernel':<28} {'metric':<36} {'ours':>12} {'file':>12} {'cli':>12}  =file  5%")
    for r in c["rows"]:
        mark = {True: "ok", False: "OVER", None: "-"}[r["cli_within_5pct"]]
        print(f"{r['name'][:28]:<28} {r['metric'][:36]:<36} {fmt(r['ours'])[:12]:>12} "
              f"{fmt(r['file'])[:12]:>12} {fmt(r['cli'])[:12]:>12}  "
              f"{'yes' if r['file_equal'] else 'NO':>5}  {mark}")
    print(f"summary: {c['kernels']} kernels ({c['file_kernels']} in the file, {c['cli_kernels']} "
          f"in the separate run); {c['file_mismatches']} metrics differ from the file; "
          f"{c['cli_over_5pct']} of {c['cli_compared']} compared are over 5% from the separate run")
    return c


def replay(prefix: str) -> int:
    """Saved pages (PREFIX.file.csv, PREFIX.cli.csv of an earlier --out) re-parsed by this
    checkout's parser, no GPU needed; the file's page stands for ours (the worker parses that same
    report with the same parser)."""
    file_k = ncu_report.parse_raw(open(prefix + ".file.csv").read())
    cli_k = ncu_report.parse_raw(open(prefix + ".cli.csv").read())
    c = report(file_k, file_k, cli_k)
    return 0 if c["cli_over_5pct"] == 0 and c["kernels"] else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("reference", nargs="?", default="")
    ap.add_argument("candidate", nargs="?", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--replay", action="store_true",
                    help="RESULT is the PREFIX of an earlier --out: its saved pages re-checked")
    a = ap.parse_args()
    if a.replay:
        return replay(a.result)
    result = json.load(open(a.result))
    prof = result.get("profile") or {}
    ours = prof.get("kernel_metrics") or []
    if prof.get("tier") != "deep" or not ours or not prof.get("report_file"):
        print(f"no deep profile in {a.result}: tier {prof.get('tier')}, flags "
              f"{json.dumps(prof.get('flags'))}")
        return 2
    tool = prof.get("tool") or {}
    print(f"cost: tier {prof.get('seconds')} s (cached {prof.get('cached')}), ncu profile "
          f"{tool.get('profile_s')} s, import {tool.get('import_s')} s, ncu {tool.get('version')}")
    file_csv = import_file(prof["report_file"])
    cli_csv, cli_s = separate_run(a.reference, a.candidate, result.get("device") or "cuda:0")
    print(f"separate ncu command line: {cli_s:.1f} s")
    try:
        file_k = ncu_report.parse_raw(file_csv)
    except ncu_report.ReportError as e:
        print(f"the report file could not be read: {e}")
        file_k = []
    try:
        cli_k = ncu_report.parse_raw(cli_csv)
    except ncu_report.ReportError as e:
        print(f"the separate run gave no CSV: {e}\n{cli_csv[-2000:]}")
        cli_k = []
    c = report(ours, file_k, cli_k)
    if a.out:
        open(a.out + ".file.csv", "w").write(file_csv)
        open(a.out + ".cli.csv", "w").write(cli_csv)
        json.dump({**c, "cost": {"seconds": prof.get("seconds"), "cached": prof.get("cached"),
                                 "tool": tool, "separate_run_s": cli_s}},
                  open(a.out + ".compare.json", "w"), indent=1)
    return 0 if c["file_mismatches"] == 0 and c["cli_over_5pct"] == 0 and file_k else 1


if __name__ == "__main__":
    sys.exit(main())
