"""Runs KernelBench's own evaluation on one candidate, the way its scripts/run_and_check.py does
in local mode, and prints one JSON line: verdict fields, its timings and the phases' wall times.

    python3 bench/kernelbench_driver.py --kb-src DIR --reference REF.py --candidate C.py \
        --backend cuda|triton [--no-baselines]

DIR is a checkout of github.com/ScalingIntelligence/KernelBench (its `src/` holds the
`kernelbench` package; never committed here). run_and_check.py itself needs pydra and modal, and
`kernelbench/__init__` imports API clients (openai, litellm, dotenv, tqdm); none of them matter to
the evaluation, so modules that are missing are replaced by inert stubs before the import. The
flow is run_and_check.py's local path: static check, eval_kernel_against_ref (5 correctness
trials, 100 perf trials, cuda_event timing, fp32), then measure_ref_program_time eager and with
torch.compile (skipped with --no-baselines).
"""
from __future__ import annotations

import argparse
import copy
import importlib
import json
import os
import sys
import time
import types

T0 = time.monotonic()


def stub_missing() -> list[str]:
    """Inert stand-ins for modules KernelBench imports but never uses while evaluating."""
    stubbed = []

    def need(name: str) -> bool:
        try:
            importlib.import_module(name)
            return False
        except Exception:  # noqa: BLE001 - any import failure: stub it
            stubbed.append(name)
            return True

    if need("dotenv"):
        m = types.ModuleType("dotenv")
        m.load_dotenv = lambda *a, **k: False
        sys.modules["dotenv"] = m
    if need("tqdm"):
        m = types.ModuleType("tqdm")
        m.tqdm = lambda it=None, *a, **k: it
        sys.modules["tqdm"] = m
    if need("openai"):
        m = types.ModuleType("openai")
        m.OpenAI = type("OpenAI", (), {})
        sys.modules["openai"] = m
    if need("litellm"):
        m = types.ModuleType("litellm")
        m.completion = lambda *a, **k: None
        sys.modules["litellm"] = m
    if need("requests"):
        sys.modules["requests"] = types.ModuleType("requests")
    if need("pydantic"):
        m = types.ModuleType("pydantic")

        class BaseModel:  # the subset KernelExecResult uses: annotated defaults, kwargs
            def __init__(self, **kwargs):
                for klass in reversed(type(self).__mro__):
                    for name in getattr(klass, "__annotations__", {}):
                        if hasattr(klass, name):
                            setattr(self, name, copy.deepcopy(getattr(klass, name)))
                for k, v in kwargs.items():
                    setattr(self, k, v)

            def __repr__(self):
                return f"{type(self).__name__}({self.__dict__})"

        m.BaseModel = BaseModel
        sys.modules["pydantic"] = m
    return stubbed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb-src", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--perf-trials", type=int, default=100)
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--build-dir", default="")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(args.kb_src), "src"))
    stubbed = stub_missing()
    import torch

    t_import = time.monotonic()
    from kernelbench import eval as kernel_eval
    from kernelbench import utils as kernel_utils
    from kernelbench.kernel_static_checker import validate_kernel_static
    from kernelbench.timing import measure_ref_program_time

    phases = {"import_s": time.monotonic() - T0, "kernelbench_import_s": time.monotonic() - t_import}
    ref_src = open(args.reference).read()
    kernel_src = open(args.candidate).read()
    out = {"candidate": os.path.basename(args.candidate), "stubbed": stubbed,
           "torch": torch.__version__}
    ok, errors, warnings = validate_kernel_static(kernel_src, backend=args.backend,
                                                  precision="fp32")
    out["static_check"] = {"ok": ok, "errors": errors, "warnings": warnings}
    device = torch.device("cuda:0")
    kernel_utils.set_gpu_arch(["Hopper"])
    build_dir = args.build_dir or os.path.join(os.getcwd(), "test_build", str(hash(kernel_src)))
    t = time.monotonic()
    result = kernel_eval.eval_kernel_against_ref(
        original_model_src=ref_src, custom_model_src=kernel_src, measure_performance=True,
        timing_method="cuda_event", verbose=False, num_correct_trials=args.trials,
        num_perf_trials=args.perf_trials, build_dir=build_dir, device=device,
        backend=args.backend, precision=kernel_eval.get_torch_dtype_from_string("fp32"))
    phases["eval_kernel_against_ref_s"] = time.monotonic() - t
    if result is None:
        out["error"] = "eval_kernel_against_ref returned None (lock file error)"
    else:
        out.update({"compiled": result.compiled, "correctness": result.correctness,
                    "runtime_ms": result.runtime, "ref_runtime_ms": result.ref_runtime,
                    "metadata": {k: str(v)[:300] for k, v in (result.metadata or {}).items()}})
    if not args.no_baselines:
        for name, compiled in (("eager", False), ("compile", True)):
            t = time.monotonic()
            try:
                r = measure_ref_program_time(
                    ref_arch_name="Reference Program", ref_arch_src=ref_src,
                    num_trials=args.perf_trials, use_torch_compile=compiled,
                    timing_method="cuda_event", device=device, verbose=False, precision="fp32")
                out[f"ref_{name}_ms"] = (r or {}).get("mean")
            except Exception as e:  # noqa: BLE001
                out[f"ref_{name}_error"] = f"{type(e).__name__}: {str(e)[:300]}"
            phases[f"ref_{name}_s"] = time.monotonic() - t
    phases["total_s"] = time.monotonic() - T0
    out["phases"] = phases
    print(json.dumps(out, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
