"""Hand-run check (bench/conv_emulate; the numpy model of triton is the package beside this file):
    PYTHONPATH=bench/conv_emulate:python /usr/bin/python3 bench/conv_emulate/check_triton.py [NAME...]
Runs the generated Triton conv candidates (every form) under the numpy model of triton on the
reduced KernelBench problems and compares them with the reference's PyTorch output."""
import ast, importlib.util, json, os, subprocess, sys, tempfile
from pathlib import Path
import torch

ROOT = str(Path(__file__).resolve().parents[2])
KB = os.environ.get("OPENKERNEL_KERNELBENCH_DIR", str(Path(ROOT).parent / "shared/kernelbench")) + "/"
GEN = ROOT + "/build/release/bin/generate_candidates"
TMP = tempfile.mkdtemp(prefix="ok_conv_emulate_")
only = sys.argv[1:]
bad = 0
for line in open(ROOT + "/tests/fixtures/generate/conv_problems.tsv"):
    if line.startswith("#") or not line.strip():
        continue
    name, fx, ref, sets = line.rstrip("\n").split("\t")
    if only and not any(o in name for o in only):
        continue
    out = f"{TMP}/cands/{name}"
    os.makedirs(out, exist_ok=True)
    subprocess.run([GEN, ROOT + "/tests/fixtures/generate/" + fx, KB + ref[3:], "triton", out, "0"],
                   check=True, capture_output=True)
    prop = json.load(open(out + "/proposal.json"))
    cands = prop["candidates"] if isinstance(prop, dict) and "candidates" in prop else prop
    seen = {}
    for k, c in enumerate(cands):
        form = c["params"]["triton-conv"]["form"]
        if form not in seen:
            seen[form] = k
    for form, k in seen.items():
        path = f"{out}/candidate_{k}.py"
        spec = importlib.util.spec_from_file_location(f"cand_{name}_{form}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for s in sets.split():
            key, val = s.split("=", 1)
            setattr(mod, key, ast.literal_eval(val))
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
