"""Hand-run check (needs g++ with C++20; no GPU):
    PYTHONPATH=python /usr/bin/python3 bench/conv_emulate/check_cuda.py [NAME...]
Runs the first 3 generated CUDA conv candidates of each reduced KernelBench problem on the CPU
model of CUDA (tests/integration/cuda_emulate.py: each block's threads as std::threads, a barrier
for __syncthreads) and compares them with the reference's PyTorch output. The test
tests/integration/test_builtin_cuda_conv.py runs the same model on chosen points of each form."""
import sys
from pathlib import Path

import torch

from conv_cases import ROOT, generated, load

sys.path.insert(0, str(ROOT / "tests/integration"))
from cuda_emulate import load_candidate  # noqa: E402

bad = 0
for name, out, reference, sets in generated("cuda", 3):
    mod = load(reference, f"ref_{name}", sets)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs())
    xs = mod.get_inputs()
    with torch.no_grad():
        want = model(*xs)
    overrides = {k: getattr(mod, k) for k in (s.split("=", 1)[0] for s in sets)}
    for path in sorted(Path(out).glob("candidate_*.py")):
        cand = load_candidate(path, f"cand_{name}_{path.stem}", overrides)
        new = cand.ModelNew(*cand.get_init_inputs())
        new.load_state_dict(model.state_dict())
        with torch.no_grad():
            got = new(*xs)
        err = (want - got).abs().max().item()
        ok = torch.allclose(want, got, atol=1e-4, rtol=1e-4)
        bad += not ok
        print(f"{name:24s} {path.stem} {'ok ' if ok else 'BAD'} max err {err:.2e}", flush=True)
sys.exit(1 if bad else 0)
