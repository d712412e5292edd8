"""Pre-builds against the device's wait on compiles: `openkernel optimize` with and without
`--prebuild`, side by side in one run (docs/search.md, "Pre-builds").

A local model (tests/integration/llm_stub.py, no latency) answers N distinct load_inline kernels
of one ReLU problem (the thread count per block and a tag differ, so each compiles from nothing;
one extension name, so the precompiled header is shared); --in-flight K keeps them waiting for the
device. Each condition gets fresh, empty caches (cold builds, the header's one-time cost
included in both), then runs the same session:

    python3 bench/optimize_prebuild.py --backend cuda --candidates 3 --in-flight 3 --out DIR

Per condition (one row; --out DIR/optimize_prebuild.json and .tsv):
  wall_s              the search loop's wall time (report.search.wall_s)
  device_busy_s       seconds the device spent evaluating
  s_per_attempt       device_busy_s / evaluations: seconds per CUDA attempt on the device
  compile_wait_s      device-held seconds spent loading (import + compile + ModelNew; phases_s
                      load) plus waiting for a pre-build of the same source (prebuild_wait):
                      the device's idle time waiting on compiles
  units_built / units_hit   the evaluations' own build results (inline_build): with pre-builds,
                      a pre-built candidate's evaluation builds nothing (keys matched)
  prebuild            report.search.prebuild (slots, status counts, seconds)
  verdicts            the attempts' verdicts (must be the same in both conditions)
Exit status 0 when both ran and every verdict matched, 1 otherwise, 2 on bad flags.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests/integration"))
from llm_stub import LlmStub  # noqa: E402

REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
"""

CUDA = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
// variant @TAG@
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (; i < n; i += stride) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu_cuda(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel();
  const int threads = @THREADS@;
  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);
  relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"
relu = load_inline(name="okbench_prebuild_relu", cpp_sources=cpp_src, cuda_sources=cuda_src,
                   functions=["relu_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu.relu_cuda(x)
'''

CPU = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""
#include <torch/extension.h>
// variant @TAG@
torch::Tensor relu_cpu(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const float* a = xc.data_ptr<float>();
  float* b = y.data_ptr<float>();
  const int64_t n = xc.numel(), block = @THREADS@;
  for (int64_t s = 0; s < n; s += block)
    for (int64_t i = s; i < std::min(n, s + block); ++i) b[i] = a[i] > 0.f ? a[i] : 0.f;
  return y;
}
"""
relu = load_inline(name="okbench_prebuild_relu_cpu", cpp_sources=src, functions=["relu_cpu"],
                   verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu.relu_cpu(x)
'''

CRITIC = json.dumps({"bottleneck": "memory", "evidence": ["one pass over the data"],
                     "suggestions": [{"action": "vectorise the loads", "expected_gain": 0.05}],
                     "expected_gain": 0.05})


def replies(backend: str, n: int, tag: str) -> list[str]:
    body = CPU if backend == "cpu" else CUDA
    threads = [128, 256, 512, 1024, 64, 192, 384, 768]
    return [f"Variant {i}.\n```python\n"
            + body.replace("@THREADS@", str(threads[i % len(threads)] + 32 * (i // len(threads))))
            .replace("@TAG@", f"{tag}-{i}") + "\n```\n" for i in range(n)]


def run_one(a: argparse.Namespace, prebuild: str, work: Path) -> dict[str, Any]:
    """One optimize session under `prebuild` (on/off) with fresh caches; its row."""
    tmp = work / f"prebuild-{prebuild}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ref = tmp / "reference.py"
    ref.write_text(REFERENCE)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_CACHE_HOME": str(tmp / "cache"),
           "XDG_DATA_HOME": str(tmp / "data"), "OPENKERNEL_INLINE_BUILD": "1"}  # opt-in server
    env.pop("OPENKERNEL_API_KEY", None)
    with LlmStub(generator=replies(a.backend, a.candidates, f"{prebuild}-{os.getpid()}"),
                 critic=[CRITIC]) as stub:
        cmd = [a.binary, "optimize", "--db", str(tmp / "db.sqlite"), "--reference", str(ref),
               "--backend", a.backend, "--model", "openai/stub-model", "--base-url",
               stub.base_url, "--iterations", str(a.candidates), "--in-flight",
               str(a.in_flight), "--prebuild", prebuild, "--no-compile-baseline", "--json",
               "--out", str(tmp / "out"), "--timeout", str(a.timeout), "--search", "prior"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.limit)
    (tmp / "stderr.txt").write_text(p.stderr)
    if p.returncode != 0 or not p.stdout.strip():
        raise RuntimeError(f"optimize --prebuild {prebuild} exited {p.returncode}: "
                           f"{p.stderr[-2000:]}")
    report = json.loads(p.stdout.strip().splitlines()[-1])
    rows = sqlite3.connect(tmp / "db.sqlite").execute(
        "SELECT a.number, e.result FROM attempts a JOIN evaluations e ON e.id = a.evaluation_id "
        "WHERE a.session = ? ORDER BY a.number", (report["session"],)).fetchall()
    wait = built = hit = 0.0
    per: list[dict[str, Any]] = []
    for number, text in rows:
        r = json.loads(text)
        ph = r.get("phases_s") or {}
        units = (r.get("inline_build") or {}).get("units") or {}
        w = float(ph.get("load", 0.0)) + float(ph.get("prebuild_wait", 0.0))
        wait += w
        built += units.get("built", 0)
        hit += units.get("hit", 0) + units.get("hit_direct", 0)
        per.append({"attempt": number, "verdict": r.get("verdict"), "wall_s": r.get("wall_s"),
                    "load_s": ph.get("load"), "prebuild_wait_s": ph.get("prebuild_wait"),
                    "units": units})
    s = report["search"]
    n = max(1, int(s.get("evaluations") or 0))
    return {"candidates": a.candidates, "in_flight": a.in_flight,
            "wall_s": round(s["wall_s"], 2), "device_busy_s": round(s["device_busy_s"], 2),
            "s_per_attempt": round(s["device_busy_s"] / n, 2),
            "compile_wait_s": round(wait, 2), "units_built": int(built), "units_hit": int(hit),
            "prebuild": s.get("prebuild"), "verdicts": [h["verdict"] for h in report["history"]],
            "attempts": per, "condition": prebuild}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--candidates", type=int, default=3)
    ap.add_argument("--in-flight", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--limit", type=float, default=600, help="seconds per optimize run")
    ap.add_argument("--binary", default=os.environ.get("OPENKERNEL_BIN")
                    or str(ROOT / "build/release/bin/openkernel"))
    ap.add_argument("--out", default=None, help="folder for the JSON/TSV rows and the runs")
    a = ap.parse_args()
    if a.candidates < 2 or a.in_flight < 2:
        ap.error("--candidates and --in-flight must be at least 2 (something must wait)")
    if not Path(a.binary).is_file():
        ap.error(f"no openkernel binary at {a.binary}")
    out = Path(a.out or tempfile.mkdtemp(prefix="okbench-prebuild-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for condition in ("off", "on"):
            rows.append(run_one(a, condition, out))
            r = rows[-1]
            print(f"prebuild {condition:3}: wall {r['wall_s']:7.1f} s  device {r['device_busy_s']:7.1f} s"
                  f"  {r['s_per_attempt']:6.1f} s/attempt  compile wait {r['compile_wait_s']:7.1f} s"
                  f"  units built {r['units_built']} hit {r['units_hit']}  {r['verdicts']}",
                  flush=True)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"failed: {e}", file=sys.stderr)
        return 1
    finally:
        (out / "optimize_prebuild.json").write_text(json.dumps(rows, indent=2) + "\n")
        keys = ["condition", "candidates", "in_flight", "wall_s", "device_busy_s",
                "s_per_attempt", "compile_wait_s", "units_built", "units_hit"]
        (out / "optimize_prebuild.tsv").write_text(
            "\t".join(keys) + "\n" + "".join("\t".join(str(r[k]) for k in keys) + "\n"
                                             for r in rows))
    print(f"rows: {out / 'optimize_prebuild.json'}")
    return 0 if rows[0]["verdicts"] == rows[1]["verdicts"] else 1


if __name__ == "__main__":
    sys.exit(main())
