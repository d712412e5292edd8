"""Hand-run check (needs g++ with C++20; no GPU):
    PYTHONPATH=python /usr/bin/python3 bench/conv_emulate/check_cuda.py [NAME...]
Runs generated CUDA conv kernels on the CPU (each block's threads as std::threads with a barrier
for __syncthreads) on the reduced KernelBench problems and compares with PyTorch."""
import os
import re
import subprocess
import sys

import torch

from conv_cases import generated, load

HARNESS = r'''
#include <barrier>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>
struct dim3 { unsigned x, y, z; };
thread_local dim3 blockIdx, threadIdx;
static std::barrier<>* ok_bar;
#define __global__
#define __launch_bounds__(n)
#define __shared__ static
#define __syncthreads() ok_bar->arrive_and_wait()
#define __ldg(p) (*(p))
KERNEL
int main(int argc, char** argv) {
  std::vector<std::vector<float>> bufs;
  for (int i = 1; i < argc; i += 2) {
    std::vector<float> b(std::atol(argv[i + 1]));
    if (FILE* f = std::fopen(argv[i], "rb")) { std::fread(b.data(), 4, b.size(), f); std::fclose(f); }
    bufs.push_back(std::move(b));
  }
  for (unsigned by = 0; by < GY; ++by)
    for (unsigned bx = 0; bx < GX; ++bx) {
      std::barrier<> bar(THREADS_N);
      ok_bar = &bar;
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < THREADS_N; ++t)
        ts.emplace_back([&, t] { blockIdx = {bx, by, 0}; threadIdx = {t, 0, 0}; NAME(ARGS); });
      for (auto& th : ts) th.join();
    }
  FILE* f = std::fopen(argv[argc - 2], "wb");
  std::fwrite(bufs.back().data(), 4, bufs.back().size(), f);
  std::fclose(f);
}
'''
bad = 0
for name, out, reference, sets in generated("cuda", 3):
    mod = load(reference, f"ref_{name}", sets)
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs())
    x = mod.get_inputs()[0]
    with torch.no_grad():
        want = model(x)
    convs = [m for m in model.modules() if isinstance(m, (torch.nn.modules.conv._ConvNd,))]
    for k in range(3):
        path = f"{out}/candidate_{k}.py"
        if not os.path.exists(path):
            continue
        src = open(path).read()
        body = src[src.index('_OK_SOURCE = r"""') + 17:]
        body = body[:body.index('"""')]
        kernels = re.findall(r"(__global__ void.*?\n}\n)", body, re.S)
        launches = re.findall(r"(\w+)<<<dim3\((\d+), (\d+)\), (\d+), 0, stream>>>\(([^)]*)\);", body)
        cur = x.contiguous().numpy().ravel()
        for kern, (kname, gx, gy, threads, args), m in zip(kernels, launches, convs):
            files = {"x": cur, "w": m.weight.detach().contiguous().numpy().ravel()}
            if m.bias is not None:
                files["bias"] = m.bias.detach().numpy().ravel()
            outs = [a.strip() for a in args.split(",")]
            shape_out = m(torch.from_numpy(cur.reshape(-1, *[1] * 0)).reshape(
                (x.shape[0], m.in_channels) + tuple(x.shape[2:]) if m is convs[0] else
                prev_shape)).shape
            files["y"] = None
            argv = []
            for a in outs:
                if files[a] is None:
                    argv += [f"{out}/y.bin", str(int(torch.tensor(shape_out).prod()))]
                else:
                    files[a].astype("float32").tofile(f"{out}/{a}.bin")
                    argv += [f"{out}/{a}.bin", str(files[a].size)]
            cpp = HARNESS.replace("KERNEL", kern).replace("GX", gx).replace("GY", gy) \
                .replace("THREADS_N", threads).replace("NAME", kname) \
                .replace("ARGS", ", ".join(f"bufs[{i}].data()" for i in range(len(outs))))
            open(f"{out}/h.cpp", "w").write(cpp)
            subprocess.run(["g++", "-O1", "-std=c++20", "-pthread", "-o", f"{out}/h", f"{out}/h.cpp"],
                           check=True)
            subprocess.run([f"{out}/h"] + argv, check=True)
            import numpy as np
            cur = np.fromfile(f"{out}/y.bin", dtype="float32")
            prev_shape = shape_out
        got = torch.from_numpy(cur).reshape(want.shape)
        err = (want - got).abs().max().item()
        ok = torch.allclose(want, got, atol=1e-4, rtol=1e-4)
        bad += not ok
        print(f"{name:24s} cand {k} {'ok ' if ok else 'BAD'} max err {err:.2e}", flush=True)
sys.exit(1 if bad else 0)
