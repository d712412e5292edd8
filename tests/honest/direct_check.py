"""Runs honest cases directly, without the engine: imports the candidate (which builds it), builds
Model and ModelNew from the same seed, draws inputs on the device and compares the outputs with
docs/evaluation.md's tolerances. It tells a wrong kernel in the corpus from a wrong verdict of
the evaluator: a case that passes here but not through `openkernel evaluate` is the evaluator's.

    PYTHONPATH=python python3 tests/honest/direct_check.py [--jobs N] [--out FILE.tsv] [CASE ...]

With no case names: every case this machine can run (GPU cases need a CUDA device). Each case
runs in its own process (so builds proceed in parallel); exit status 1 if any case failed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from honest_cases import CASES  # noqa: E402

TOLERANCES = {"float64": (1e-7, 1e-7), "float32": (1e-3, 1e-3), "float16": (1e-2, 1e-2),
              "bfloat16": (2e-2, 2e-2)}


def load(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(got: Any, want: Any) -> str:
    """'' when `got` matches `want` (docs/evaluation.md, "Tolerances"), else why not."""
    import torch

    if type(got) is not torch.Tensor:
        return f"output is a {type(got).__name__}, not a torch.Tensor"
    if got.shape != want.shape or got.dtype != want.dtype or got.device != want.device:
        return f"got {tuple(got.shape)} {got.dtype} {got.device}, want " \
               f"{tuple(want.shape)} {want.dtype} {want.device}"
    if not want.is_floating_point():
        return "" if torch.equal(got, want) else "integer outputs differ"
    atol, rtol = TOLERANCES[str(want.dtype).replace("torch.", "")]
    g, w = got.double(), want.double()
    atol_eff = atol * max(float(w.pow(2).mean().sqrt()), 1e-6)
    bad = (g - w).abs() > atol_eff + rtol * w.abs()
    if bool(bad.any()):
        return f"{int(bad.sum())} elements off, max abs error {float((g - w).abs().max()):.3g}"
    rel_l2 = float((g - w).norm() / w.norm().clamp_min(1e-30))
    return "" if rel_l2 <= rtol else f"relative L2 error {rel_l2:.3g} over {rtol}"


def check_one(name: str, trials: int = 3) -> dict[str, Any]:
    """One case in this process: build, run `trials` seeded input sets, compare every output."""
    import torch

    case = CASES[name]
    device = "cuda" if case.gpu else "cpu"
    start = time.monotonic()
    ref = load(HERE / case.reference, f"honest_ref_{name}")
    cand = load(HERE / case.candidate, f"honest_cand_{name}")
    build_s = time.monotonic() - start
    torch.manual_seed(1234)
    model = ref.Model(*ref.get_init_inputs()).to(device).eval()
    torch.manual_seed(1234)
    model_new = cand.ModelNew(*ref.get_init_inputs()).to(device).eval()
    problems = []
    for trial in range(trials):
        torch.manual_seed(100 + trial)
        if device == "cpu":  # torch 1.13 (this project's CPU machine) has no torch.device scope
            drawn = ref.get_inputs()
        else:
            with torch.device(device):
                drawn = ref.get_inputs()
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in drawn]
        with torch.no_grad():
            want = model(*inputs)
            got = model_new(*inputs)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        if len(got) != len(want):
            problems.append(f"trial {trial}: {len(got)} outputs, want {len(want)}")
            continue
        problems += [f"trial {trial} output {i}: {why}" for i, (g, w) in enumerate(zip(got, want))
                     if (why := compare(g, w))]
    if device == "cuda":
        torch.cuda.synchronize()
    return {"case": name, "ok": not problems, "build_s": round(build_s, 1),
            "seconds": round(time.monotonic() - start, 1), "problems": problems[:5]}


def run_isolated(name: str, timeout_s: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE.parent.parent / "python"), os.environ.get("PYTHONPATH", "")]))
    try:
        proc = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True,
                              text=True, env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"case": name, "ok": False, "problems": [f"timed out after {timeout_s:.0f} s"]}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"case": name, "ok": False, "problems": [proc.stderr.strip()[-1500:]]}
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all this machine can run)")
    parser.add_argument("--jobs", type=int, default=8, help="cases checked at once")
    parser.add_argument("--timeout", type=float, default=480, help="seconds per case")
    parser.add_argument("--out", help="also write a TSV here")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(check_one(args.one)))
        return 0
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    import torch

    names = args.cases or [n for n, c in CASES.items() if torch.cuda.is_available() or not c.gpu]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda n: run_isolated(n, args.timeout), names))
    rows = ["case\tok\tbuild_s\tseconds\tproblems"]
    for r in results:
        rows.append(f"{r['case']}\t{r['ok']}\t{r.get('build_s', '')}\t{r.get('seconds', '')}\t"
                    + " | ".join(r["problems"]).replace("\t", " ").replace("\n", " ")[:400])
    print("\n".join(rows))
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
