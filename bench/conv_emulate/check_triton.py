"""Hand-run check (bench/conv_emulate; the numpy model of triton is the package beside this file):
    PYTHONPATH=bench/conv_emulate:python /usr/bin/python3 bench/conv_emulate/check_triton.py [NAME...]
Runs the generated Triton conv candidates (every form) under the numpy model of triton on the
reduced KernelBench problems and compares them with the reference's PyTorch output."""
import json
import sys

import torch

from conv_cases import generated, load

bad = 0
for name, out, _, sets in generated("triton", 0):
    prop = json.load(open(out + "/proposal.json"))
    cands = prop["candidates"] if isinstance(prop, dict) and "candidates" in prop else prop
    seen = {}
    for k, c in enumerate(cands):
        form = c["params"]["triton-conv"]["form"]
        if form not in seen:
            seen[form] = k
    for form, k in seen.items():
        path = f"{out}/candidate_{k}.py"
        mod = load(path, f"cand_{name}_{form}", sets)
        torch.manual_seed(0)
        model = mod.Model(*mod.get_init_inputs())
        new = mod.ModelNew(*mod.get_init_inputs())
        new.load_state_dict(model.state_dict())
        xs = mod.get_inputs()
        with torch.no_grad():
            want = model(*xs)
            got = new(*xs)
        err = (want - got).abs().max().item()
        ok = torch.allclose(want, got, atol=1e-4, rtol=1e-4)
        bad += not ok
        print(f"{name:24s} {form:7s} {'ok ' if ok else 'BAD'} max err {err:.2e}", flush=True)
sys.exit(1 if bad else 0)
