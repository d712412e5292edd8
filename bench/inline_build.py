"""torch's load_inline against ours (openkernel_worker.inline_build), side by side, in one run.

Cases: a CUDA ReLU extension, a CUDA extension with another body and the same signature, a CPU
extension. Each build runs in a fresh Python process (as a candidate's would). Order:
  1. torch, cold (each case in an empty extensions directory);
  2. ours, cold: an empty object cache; the first case pays the precompiled header (reported
     apart, `pch_s`), the second is "a new source once the header cache exists";
  3. both warm: the same sources and directories again in new processes.
Outputs of every build are checked against the case's torch expression (`same`). Prints a table
and writes a TSV, plus every build's full log (our builder's per-unit results and fallback reasons)
as JSON lines in inline_build_logs.jsonl.

  python3 bench/inline_build.py [--out DIR] [--cases relu_cuda,body_cuda,cpu] [--builders torch,ours]
CUDA cases are skipped (with a note) without a GPU. OPENKERNEL_INLINE_CACHE is set to a fresh
directory under --out; the build sandbox is used when bwrap works here.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIG = "torch::Tensor run(torch::Tensor x);"
CUDA_RELU = r'''
__global__ void relu_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor run(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
'''
CUDA_BODY = CUDA_RELU.replace("x[i] > 0.f ? x[i] : 0.f", "x[i] > 0.f ? x[i] * 2.f : 0.1f * x[i]")
CPU_SRC = r'''
torch::Tensor run(torch::Tensor x) {
  auto y = torch::empty_like(x);
  auto* a = x.data_ptr<float>();
  auto* b = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) b[i] = a[i] > 0.f ? a[i] : 0.f;
  return y;
}
'''
CASES = {"relu_cuda": ("cuda", CUDA_RELU), "body_cuda": ("cuda", CUDA_BODY), "cpu": ("cpu", CPU_SRC)}


def expected(case: str, x: Any) -> Any:
    """What the case's kernel computes, written with torch (exact: the same float operations)."""
    import torch

    if case == "body_cuda":
        return torch.where(x > 0, x * 2.0, x * 0.1)
    return torch.relu(x)


def child(mode: str, case: str, ext_dir: str) -> None:
    """One build in this fresh process; prints one JSON line."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ["TORCH_EXTENSIONS_DIR"] = ext_dir
    t0 = time.monotonic()
    import torch
    from torch.utils.cpp_extension import load_inline

    import_s = time.monotonic() - t0
    log: list[Any] = []
    if mode == "ours":
        from openkernel_worker import inline_build

        inline_build.install(None)
    kind, src = CASES[case]
    t1 = time.monotonic()
    if kind == "cuda":
        ext = load_inline("okbench_cuda", SIG, cuda_sources=src,  # one name: one binding
                          functions=["run"])
    else:
        ext = load_inline("okbench_cpu", src, functions=["run"])
    build_s = time.monotonic() - t1
    if mode == "ours":
        log = inline_build.build_log()
    device = "cuda" if kind == "cuda" else "cpu"
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1 << 20, generator=g).to(device)
    y = ext.run(x)
    digest = float(y.double().sum().item())
    print(json.dumps({"build_s": round(build_s, 3), "import_s": round(import_s, 3),
                      "checksum": digest, "matches": bool(torch.equal(y, expected(case, x))),
                      "log": log}))


def measure(mode: str, case: str, ext_dir: str, env: dict[str, str]) -> dict[str, Any]:
    r = subprocess.run([sys.executable, __file__, "--child", mode, case, ext_dir], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-800:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def summary(res: dict[str, Any]) -> tuple[str, str]:
    """(pch seconds, what the units did) from our build log."""
    pch, what = 0.0, []
    for entry in res.get("log") or []:
        for u in entry.get("units", []):
            pch += float(u.get("pch_build_s", 0.0))
            what.append(f"{u.get('source')}:{u.get('result')}"
                        + (f"(pch {u['pch']})" if u.get("pch") else ""))
        if entry.get("link"):
            what.append(f"link:{entry['link']}"
                        + f"({(entry.get('worker_link') or {}).get('result', '')})")
        if entry.get("path") == "torch":
            what.append(f"torch fallback: {entry.get('reason', '')[:80]}")
    return (f"{pch:.1f}" if pch else "", " ".join(what))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/okbench-inline")
    ap.add_argument("--cases", default="relu_cuda,body_cuda,cpu")
    ap.add_argument("--builders", default="torch,ours",
                    help="which builders run (torch, ours, or both); outputs are always checked "
                         "against the case's torch expression")
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return 0
    import shutil

    import torch

    os.makedirs(a.out, exist_ok=True)
    work = os.path.join(a.out, "work")
    shutil.rmtree(work, ignore_errors=True)
    env = dict(os.environ, OPENKERNEL_INLINE_CACHE=os.path.join(work, "inline-cache"),
               PYTHONPATH=os.path.join(ROOT, "python"))
    cases = [c for c in a.cases.split(",") if c]
    if not torch.cuda.is_available():
        skipped = [c for c in cases if CASES[c][0] == "cuda"]
        if skipped:
            print(f"no GPU here: skipping {', '.join(skipped)}")
        cases = [c for c in cases if CASES[c][0] != "cuda"]
    rows: list[list[str]] = []
    builders = [b for b in a.builders.split(",") if b in ("torch", "ours")]
    logs = open(os.path.join(a.out, "inline_build_logs.jsonl"), "w")
    for phase in ("cold", "warm"):
        for mode in builders:
            for case in cases:
                res = measure(mode, case, os.path.join(work, f"ext-{mode}-{case}"), env)
                logs.write(json.dumps({"phase": phase, "builder": mode, "case": case, **res}) + "\n")
                logs.flush()
                if "error" in res:
                    rows.append([phase, mode, case, "", "", "", "error: " + res["error"][-200:]])
                    continue
                same = "yes" if res.get("matches") else "NO"
                pch, what = summary(res)
                rows.append([phase, mode, case, f"{res['build_s']:.2f}", pch, same, what])
                print("\t".join(rows[-1]), flush=True)
    header = ["phase", "builder", "case", "build_s", "pch_s", "same_output", "units"]
    path = os.path.join(a.out, "inline_build.tsv")
    with open(path, "w") as f:
        f.write("\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows))
    print("\n" + "\t".join(header))
    for r in rows:
        print("\t".join(r))
    print(f"\nwrote {path}")
    return 0 if all(r[5] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
