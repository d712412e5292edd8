"""The CUDA execution model on the CPU, for checking generated CUDA kernels where there is no GPU:
`compile_cuda`, `ptr`, `stream` and `DEFAULT_CUDA_FLAGS` with the meaning openkernel_worker.native
gives them, so a builtin cuda candidate runs unchanged (`load_candidate` imports it with these in
place of native's). The kernel source is compiled by g++ (C++20) against a small header: every
launch runs its blocks one after another, each block's threads as std::threads, `__syncthreads`
a std::barrier (a thread that returns leaves the barrier, as on the GPU), `__shared__` one static
array per kernel shared by the block's threads, `blockIdx`/`threadIdx` thread-local. Only what the
builtin generator's kernels use is modelled: warp shuffles only where the whole block shuffles
in lockstep (a butterfly over the block's thread ids, as the block reductions use them); no
atomics or dynamic shared memory.
The index arithmetic, masks, tiling and barriers run exactly as written; timing means nothing.
Tensors are CPU tensors; a kernel's pointers are their data."""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Sequence

DEFAULT_CUDA_FLAGS: tuple[str, ...] = ()

HEADER = r"""
#include <barrier>
#include <cmath>
#include <cstdint>
#include <math.h>
#include <stdint.h>
#include <thread>
#include <vector>
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
static thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
static std::barrier<>* ok_emu_barrier;
typedef void* cudaStream_t;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
#define __syncthreads() ok_emu_barrier->arrive_and_wait()
#define __ldg(p) (*(p))
static inline int cudaGetLastError() { return 0; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
struct __align__(16) float4 { float x, y, z, w; };  // the row kernels' vector loads and stores
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static float* ok_emu_lanes;  // one slot per thread of the running block
static thread_local unsigned ok_emu_tid;
// A butterfly shuffle, for kernels whose block shuffles in lockstep (every thread of the block
// calls it together: the generated block reductions); lanes are the block's thread ids. Its two
// block-wide barriers also order shared memory around each shuffle, so a block reduction that is
// missing a __syncthreads of its own passes here: the emulator cannot catch that race.
static inline float __shfl_xor_sync(unsigned, float v, int off) {
  ok_emu_lanes[ok_emu_tid] = v;
  ok_emu_barrier->arrive_and_wait();
  const float r = ok_emu_lanes[ok_emu_tid ^ static_cast<unsigned>(off)];
  ok_emu_barrier->arrive_and_wait();
  return r;
}
template <class Body>
void ok_emu_launch(dim3 grid, dim3 block, Body body) {
  const unsigned n = block.x * block.y * block.z;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        std::barrier<> bar(n);
        ok_emu_barrier = &bar;
        std::vector<float> lanes(n);
        ok_emu_lanes = lanes.data();
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < n; ++t)
          threads.emplace_back([&, t] {
            ok_emu_tid = t;
            blockIdx = dim3(bx, by, bz);
            threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
            blockDim = block;
            gridDim = grid;
            body();
            bar.arrive_and_drop();
          });
        for (auto& th : threads) th.join();
      }
}
"""


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    return parts + [cur.strip()]


def translate(source: str) -> str:
    """CUDA source as C++ for the header above: the runtime include dropped and every
    `kernel<<<grid, block, shared, stream>>>(args);` written as an ok_emu_launch."""
    source = source.replace("#include <cuda_runtime.h>", "")
    launch = re.compile(r"(\w+)<<<(.*?)>>>\((.*?)\);", re.S)

    def emulate(m: re.Match[str]) -> str:
        grid, block, shared = _split_top(m.group(2))[:3]
        if shared.strip() != "0":
            raise ValueError(f"dynamic shared memory is not modelled: {m.group(0)}")
        return f"ok_emu_launch(dim3({grid}), dim3({block}), [&] {{ {m.group(1)}({m.group(3)}); }});"

    return HEADER + launch.sub(emulate, source)


def compile_cuda(source: str, flags: Sequence[str] = DEFAULT_CUDA_FLAGS,
                 name: str = "kernel") -> ctypes.CDLL:
    """The kernels of `source` built for the CPU model (cached by the translated text's hash)."""
    del flags, name  # nvcc's flags mean nothing to g++
    text = translate(source)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = Path(os.environ.get("OK_CUDA_EMULATE_DIR") or tempfile.gettempdir()) / "ok_cuda_emu"
    folder.mkdir(parents=True, exist_ok=True)
    lib = folder / f"{digest}.so"
    if not lib.is_file():
        cpp = folder / f"{digest}.cpp"
        cpp.write_text(text)
        tmp = folder / f"{digest}.{os.getpid()}.so"
        p = subprocess.run(["g++", "-O1", "-std=c++20", "-shared", "-fPIC", "-pthread", "-w",
                            "-o", str(tmp), str(cpp)], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"g++ failed on the emulated kernels ({cpp}):\n{p.stderr[-4000:]}")
        os.replace(tmp, lib)
    return ctypes.CDLL(str(lib))


def ptr(tensor: Any) -> ctypes.c_void_p:
    """The data pointer of a contiguous CPU tensor."""
    if not tensor.is_contiguous():
        raise ValueError("ptr() needs a contiguous tensor")
    return ctypes.c_void_p(tensor.data_ptr())


def stream() -> ctypes.c_void_p:
    """No stream: launches run to their end before returning."""
    return ctypes.c_void_p(None)


NATIVE_IMPORT = re.compile(r"^from openkernel_worker\.native import ", re.M)


def load_candidate(path: Path, module_name: str, overrides: dict[str, Any]) -> types.ModuleType:
    """A builtin cuda candidate imported with this model in place of openkernel_worker.native,
    its module-level constants set to `overrides` (a reference's --set values) before its
    classes are used."""
    source = path.read_text()
    if not NATIVE_IMPORT.search(source):
        raise ValueError(f"{path} does not import openkernel_worker.native")
    source = NATIVE_IMPORT.sub("from cuda_emulate import ", source)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    for key, value in overrides.items():
        setattr(module, key, value)
    return module
