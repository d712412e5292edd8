"""The profiled process: one forward of a candidate, for a profiler that started this process.

`python -m openkernel_worker.profile_forward SPEC.json` (profile_run.py starts it, inside the
candidate's sandbox and, for the deep tier, under ncu). SPEC names the staged reference and
candidate, the overrides, the init and input seeds, the device, `mode` and `output`. It builds
`ModelNew` as the evaluation does, runs one forward untouched (Triton's compile, lazy set-up),
then one forward between the profiler's start and stop:

- mode "ncu": cudaProfilerStart/Stop (ncu runs with --profile-from-start off), so only the
  second forward's kernels are profiled;
- mode "proton": Triton's Proton session (`triton.profiler`) around it, written to `output`
  (.hatchet JSON); Proton's intra-kernel instrumentation is not asked for.

Exit status 0 when the forward ran; 3 when the candidate failed (its error on stderr); 4 when
the profiler is not there (Proton not importable). Candidate code runs here: nothing this process
writes is trusted beyond being evidence for the critic (docs/profiling.md).
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

EXIT_CANDIDATE = 3
EXIT_NO_PROFILER = 4


def _model(spec: dict[str, Any]) -> tuple[Any, list[Any]]:
    from .problem import build_model, load_module, load_reference, make_init_inputs, make_inputs

    if spec.get("extensions_dir"):
        os.environ["TORCH_EXTENSIONS_DIR"] = str(spec["extensions_dir"])
    ref = load_reference(spec["reference"], spec.get("overrides") or {},
                         module_name="openkernel_reference_copy")
    with open(spec["candidate"]) as f:
        source = f.read()
    module = load_module(spec["candidate"], source, "openkernel_candidate")
    init_seed = int(spec["init_seed"])
    model = build_model(module.ModelNew, make_init_inputs(ref.module, init_seed), init_seed,
                        spec["device"])
    return model, make_inputs(ref.module, int(spec["seed"]), spec["device"])


def _forward(model: Any, inputs: list[Any]) -> None:
    import torch

    with torch.no_grad():
        model(*inputs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def run(spec: dict[str, Any]) -> int:
    import torch

    mode = spec.get("mode")
    if mode == "proton":
        try:
            import triton.profiler as proton  # type: ignore[import-not-found]
        except ImportError as e:
            sys.stderr.write(f"openkernel profile: Proton is not importable: {e}\n")
            return EXIT_NO_PROFILER
    try:
        model, inputs = _model(spec)
        _forward(model, inputs)  # compiles and warms; not profiled
        if mode == "proton":
            proton.start(os.path.splitext(spec["output"])[0], hook="triton")
            _forward(model, inputs)
            proton.finalize()
        elif not str(spec["device"]).startswith("cuda"):
            _forward(model, inputs)  # a CPU device (OPENKERNEL_PROFILE_ON_CPU): nothing to gate
        else:
            torch.cuda.profiler.start()
            _forward(model, inputs)
            torch.cuda.profiler.stop()
    except BaseException:  # noqa: BLE001 - the candidate's failure, reported, not raised
        sys.stderr.write(traceback.format_exc()[-4000:])
        return EXIT_CANDIDATE
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m openkernel_worker.profile_forward SPEC.json\n")
        return 2
    with open(argv[0]) as f:
        return run(json.load(f))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
