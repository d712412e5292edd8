"""nvcc's steps as openkernel_worker.inline_nvcc schedules them, against plain `nvcc -c`.

Compiles one .cu four ways (no GPU needed, only the CUDA toolkit):
  plain     `nvcc -c` (its per-step times from `--time`);
  unpinned  our runner over the dry run, nvcc's own dependencies (cicc waits for cudafe++'s
            module id);
  same_id   the module id pinned to the one nvcc generated in `plain`: the object must be
            byte-identical to plain's;
  ours      the module id pinned from a content key (as the worker does): same global symbols
            as plain's (the id, which names anonymous namespaces, aside), and both objects link
            into shared libraries with the same symbols.
Case `plain` is a small kernel with <cuda_runtime.h>; case `torch` adds <torch/extension.h>
(torch's include directories and its load_inline CUDA flags).

  python3 bench/nvcc_schedule.py [--case plain|torch] [--arch sm_90a] [--jobs N] [--out DIR]
Prints one JSON object (seconds per way, per-step times, checks); exit 1 when a check fails.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from openkernel_worker import inline_nvcc  # noqa: E402

KERNEL = r"""
#include <cuda_runtime.h>
static __device__ float twice(float v) { return 2.f * v; }
__global__ void relu2(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? twice(x[i]) : 0.f;
}
extern "C" int launch_relu2(const float* x, float* y, int n, cudaStream_t s) {
  relu2<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return (int)cudaGetLastError();
}
"""
TORCH_KERNEL = "#include <torch/extension.h>\n" + KERNEL + r"""
torch::Tensor run(torch::Tensor x) {
  auto y = torch::empty_like(x);
  launch_relu2(x.data_ptr<float>(), y.data_ptr<float>(), (int)x.numel(), 0);
  return y;
}
"""


def torch_flags() -> list[str]:
    """torch's include directories and the flags its load_inline passes nvcc."""
    import sysconfig

    from torch.utils.cpp_extension import include_paths

    flags = []
    for p in [*include_paths(), sysconfig.get_paths()["include"]]:
        flags += ["-isystem", p]
    return flags + ["-DTORCH_EXTENSION_NAME=okbench", "-DTORCH_API_INCLUDE_EXTENSION_H",
                    "-D_GLIBCXX_USE_CXX11_ABI=1", "-D__CUDA_NO_HALF_OPERATORS__",
                    "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
                    "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr", "-std=c++17"]


class Nvcc:
    def __init__(self, nvcc: str, flags: list[str], cwd: str) -> None:
        self.nvcc, self.flags, self.cwd = nvcc, flags, cwd
        self.env = dict(os.environ, PATH=f"{os.path.dirname(nvcc)}:{os.environ.get('PATH', '')}")

    def sh(self, command: str) -> inline_nvcc.StepResult:
        r = subprocess.run(["/bin/sh", "-c", command], cwd=self.cwd, env=self.env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return _Result(r.returncode, r.stdout)

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.nvcc, *self.flags, *args], cwd=self.cwd, env=self.env,
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


class _Result:
    def __init__(self, code: int, output: str) -> None:
        self.code, self.output = code, output


def scheduled(nv: Nvcc, out: str, module_id: str | None, jobs: int) -> dict[str, Any]:
    keep = os.path.join(nv.cwd, f"keep-{out}")
    os.makedirs(keep)
    dry = nv("-c", "k.cu", "-o", out, "--dryrun", "--keep", "--keep-dir", keep)
    if dry.returncode != 0:
        raise SystemExit(f"dry run failed: {dry.stdout[-2000:]}")
    p = inline_nvcc.plan(dry.stdout, module_id)
    assert p is not None
    t0 = time.monotonic()
    failed = inline_nvcc.run_plan(p, nv.sh, jobs, nv.cwd)
    seconds = time.monotonic() - t0
    if failed is not None:
        raise SystemExit(f"a step failed: {failed.output[-2000:]}")
    return {"seconds": round(seconds, 2), "pinned": p.module_id is not None,
            "steps": " ".join(f"{i}:{c.split()[0].strip(chr(34)).rsplit('/', 1)[-1]}"
                              f"<-{','.join(map(str, sorted(d)))}"
                              for i, (c, d) in enumerate(zip(p.commands, p.deps)))}


def symbols(path: str, module_id: str = "") -> list[str]:
    """Global symbols, the module id (in anonymous namespaces' names) as @ID@."""
    r = subprocess.run(["nm", "--defined-only", "-g", path], text=True, stdout=subprocess.PIPE,
                       check=True)
    names = (line.split()[-1] for line in r.stdout.splitlines() if line.strip())
    return sorted(n.replace(module_id, "@ID@") if module_id else n for n in names)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", choices=["plain", "torch"], default="plain")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("--out", default="/tmp/oknvcc-schedule")
    a = ap.parse_args()
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.access(nvcc, os.X_OK):
        print("no nvcc here (PATH, /usr/local/cuda/bin)")
        return 2
    work = os.path.join(a.out, a.case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(work, "k.cu"), "w") as f:
        f.write(TORCH_KERNEL if a.case == "torch" else KERNEL)
    arch = a.arch.replace("sm_", "")
    flags = ["-Xcompiler", "-fPIC", "-gencode", f"arch=compute_{arch},code=sm_{arch}"]
    nv = Nvcc(nvcc, flags + (torch_flags() if a.case == "torch" else []), work)
    t0 = time.monotonic()
    plain = nv("-c", "k.cu", "-o", "plain.o", "--keep", "--keep-dir", ".", "--time", "t.csv")
    plain_s = time.monotonic() - t0
    if plain.returncode != 0:
        print(plain.stdout[-3000:])
        return 1
    with open(os.path.join(work, "t.csv")) as f:
        steps = [(r[1].strip(), float(r[6])) for r in csv.reader(f) if len(r) > 7
                 and r[7].strip() == "ms"]
    with open(os.path.join(work, "k.module_id")) as f:
        nvcc_id = f.read()
    ours_id = inline_nvcc.module_id_for("k.cu", "0123456789abcdef" * 4)
    result: dict[str, Any] = {"case": a.case, "nvcc": nvcc, "jobs": a.jobs, "cpus": os.cpu_count(),
                              "plain_s": round(plain_s, 2),
                              "plain_steps_s": [[n, round(ms / 1000, 2)] for n, ms in steps]}
    result["unpinned"] = scheduled(nv, "unpinned.o", None, a.jobs)
    result["same_id"] = scheduled(nv, "same.o", nvcc_id, a.jobs)
    result["ours"] = scheduled(nv, "ours.o", ours_id, a.jobs)
    read = lambda n: open(os.path.join(work, n), "rb").read()  # noqa: E731
    # nvcc's own id is the same run to run unless the unit has no external definition (then it
    # holds the process id): informational.
    result["unpinned_identical"] = read("unpinned.o") == read("plain.o")
    checks = {"same_id_identical": read("same.o") == read("plain.o"),
              "ours_same_symbols": symbols(os.path.join(work, "ours.o"), ours_id) ==
              symbols(os.path.join(work, "plain.o"), nvcc_id)}
    for name in ("plain", "ours"):
        r = nv("-shared", f"{name}.o", "-o", f"lib{name}.so")
        checks[f"{name}_links"] = r.returncode == 0
    if checks["plain_links"] and checks["ours_links"]:
        checks["libraries_same_symbols"] = symbols(os.path.join(work, "libours.so"), ours_id) \
            == symbols(os.path.join(work, "libplain.so"), nvcc_id)
    result["checks"] = checks
    print(json.dumps(result, indent=1))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
