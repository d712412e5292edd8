"""inline_nvcc.py: nvcc's dry run as a step graph.

Fast: the graph of a real CUDA 13 dry run (cicc waits for cudafe++'s module id unless it is
pinned; the final host compile waits for everything) and the runner's order. With nvcc (no GPU
needed): a small .cu built through the graph links into a library with the same symbols as plain
`nvcc -c`, and, with nvcc's own module id pinned, the object is byte-identical to nvcc's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from openkernel_worker import inline_cache, inline_nvcc

# `nvcc -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -c k.cu -o k.o --dryrun --keep
# --keep-dir keep` with CUDA 13.0 (variables trimmed).
DRYRUN = """\
#$ _NVVM_BRANCH_=nvvm
#$ INCLUDES="-I/usr/local/cuda/bin/../targets/x86_64-linux/include"
#$ LIBRARIES=  "-L/usr/local/cuda/bin/../targets/x86_64-linux/lib/stubs"
#$ gcc -D__CUDA_ARCH_LIST__=900 -E -x c++ -D__CUDACC__ -D__NVCC__  -fPIC -include "cuda_runtime.h" -m64 "k.cu" -o "keep/k.cpp4.ii"
#$ cudafe++ --c++17 --static-host-stub --orig_src_file_name "k.cu" --orig_src_path_name "/t/k.cu" --m64 --parse_templates --gen_c_file_name "keep/k.cudafe1.cpp" --stub_file_name "k.cudafe1.stub.c" --gen_module_id_file --module_id_file_name "keep/k.module_id" "keep/k.cpp4.ii"
#$ gcc -D__CUDA_ARCH__=900 -D__CUDA_ARCH_LIST__=900 -E -x c++  -DCUDA_DOUBLE_MATH_FUNCTIONS -D__CUDACC__ -D__NVCC__  -fPIC -include "cuda_runtime.h" -m64 "k.cu" -o "keep/k.cpp1.ii"
#$ "$CICC_PATH/cicc" --c++17 --static-host-stub --orig_src_file_name "k.cu" --orig_src_path_name "/t/k.cu" -arch compute_90a -m64 --include_file_name "k.fatbin.c" -tused --module_id_file_name "keep/k.module_id" --gen_c_file_name "keep/k.cudafe1.c" --stub_file_name "keep/k.cudafe1.stub.c" --gen_device_file_name "keep/k.cudafe1.gpu"  "keep/k.cpp1.ii" -o "keep/k.ptx"
#$ ptxas -arch=sm_90a -m64  "keep/k.ptx"  -o "keep/k.cubin"
#$ fatbinary --create="keep/k.fatbin" -64 "--image3=kind=elf,sm=90a,file=keep/k.cubin" --embedded-fatbin="keep/k.fatbin.c"
#$ gcc -D__CUDA_ARCH__=900 -D__CUDA_ARCH_LIST__=900 -c -x c++  -DCUDA_DOUBLE_MATH_FUNCTIONS -fPIC -Wno-psabi -m64 "keep/k.cudafe1.cpp" -o "k.o"
"""
HOST_PP, CUDAFE, DEV_PP, CICC, PTXAS, FATBIN, FINAL = range(7)


def test_unpinned_graph_is_nvccs_order() -> None:
    """As nvcc runs it, cicc reads the id cudafe++ writes: the device chain waits."""
    p = inline_nvcc.plan(DRYRUN)
    assert p is not None and p.module_id is None and len(p.commands) == 7
    assert p.prefix.startswith("export _NVVM_BRANCH_=nvvm; ")
    assert "export LIBRARIES=" in p.prefix
    assert p.deps[CUDAFE] == {HOST_PP} and p.deps[DEV_PP] == set()
    assert p.deps[CICC] == {CUDAFE, DEV_PP}  # the module id file
    assert p.deps[PTXAS] == {CICC} and PTXAS in p.deps[FATBIN]
    assert p.deps[FINAL] == set(range(FINAL))  # it #includes the stub and fatbin.c
    assert inline_nvcc.nvcc_steps(DRYRUN, "keep") == (p.prefix, p.commands, p.deps)


def test_pinned_graph_runs_chains_in_parallel() -> None:
    ident = inline_nvcc.module_id_for("/x/cuda.cu", "0123456789abcdef" * 4)
    assert ident == "_01234567_7_cuda_cu_89abcdef"
    p = inline_nvcc.plan(DRYRUN, ident)
    assert p is not None and p.module_id == ("keep/k.module_id", ident)
    assert "--gen_module_id_file" not in p.commands[CUDAFE]
    assert '--module_id_file_name "keep/k.module_id"' in p.commands[CUDAFE]
    assert p.deps[CUDAFE] == {HOST_PP} and p.deps[CICC] == {DEV_PP}
    assert p.deps[FINAL] == set(range(FINAL))
    # A keep directory whose name looks like a file is no shared intermediate.
    q = inline_nvcc.plan(DRYRUN.replace("keep/", "/w/keep-out.o/"), ident)
    assert q is not None and q.deps == p.deps


def test_not_pinned_without_one_generator() -> None:
    two = DRYRUN.replace("-tused --module_id_file_name", "-tused --gen_module_id_file "
                                                         "--module_id_file_name")
    assert two != DRYRUN
    p = inline_nvcc.plan(two, "_x_1_k_y")
    assert p is not None and p.module_id is None and p.notes
    assert CUDAFE in p.deps[CICC]
    assert inline_nvcc.plan("no steps here\n") is None


@dataclass
class _R:
    code: int
    output: str


def test_run_plan_order_and_failure(tmp_path: Path) -> None:
    p = inline_nvcc.plan(DRYRUN, "_id_1_k_k")
    assert p is not None
    started: dict[int, float] = {}
    ended: dict[int, float] = {}
    lock = threading.Lock()

    def run(command: str) -> _R:
        key = next(i for i, c in enumerate(p.commands) if command == p.prefix + c)
        with lock:
            started[key] = time.monotonic()
        time.sleep(0.2)
        with lock:
            ended[key] = time.monotonic()
        return _R(1 if key == PTXAS and fail else 0, "ptxas: boom" if key == PTXAS else "")

    (tmp_path / "keep").mkdir()
    fail = False
    assert inline_nvcc.run_plan(p, run, 4, str(tmp_path)) is None
    assert (tmp_path / "keep" / "k.module_id").read_text() == "_id_1_k_k"
    # The host front end and the device chain overlap; the final compile starts last.
    assert started[CUDAFE] < ended[CICC] and started[CICC] < ended[CUDAFE]
    assert started[FINAL] >= max(v for k, v in ended.items() if k != FINAL)
    fail = True
    started.clear()
    r = inline_nvcc.run_plan(p, run, 4, str(tmp_path))
    assert r is not None and r.output == "ptxas: boom"
    assert FATBIN not in started and FINAL not in started  # nothing after a failure


# ---------------------------------------------------------------------------------------------
# With the real nvcc (compiles only; no GPU needed)

NVCC = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if
                                     os.access(p, os.X_OK)), None)
needs_nvcc = pytest.mark.skipif(NVCC is None or shutil.which("nm") is None,
                                reason="needs nvcc (the CUDA toolkit; no GPU) and nm")
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
FLAGS = ["-Xcompiler", "-fPIC", "-gencode", "arch=compute_90a,code=sm_90a"]


def _nvcc(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{os.path.dirname(str(NVCC))}:{os.environ.get('PATH', '')}")
    return subprocess.run([str(NVCC), *FLAGS, *args], cwd=tmp, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)


def _scheduled(tmp: Path, out: str, module_id: str) -> inline_nvcc.Plan:
    keep = tmp / f"keep-{out}"
    keep.mkdir()
    dry = _nvcc(tmp, "-c", "k.cu", "-o", out, "--dryrun", "--keep", "--keep-dir", str(keep))
    assert dry.returncode == 0, dry.stdout
    p = inline_nvcc.plan(dry.stdout, module_id)
    assert p is not None and p.module_id is not None, dry.stdout
    env = dict(os.environ, PATH=f"{os.path.dirname(str(NVCC))}:{os.environ.get('PATH', '')}")

    def run(command: str) -> _R:
        r = subprocess.run(["/bin/sh", "-c", command], cwd=tmp, env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return _R(r.returncode, r.stdout)

    failed = inline_nvcc.run_plan(p, run, 4, str(tmp))
    assert failed is None, failed.output
    return p


def _symbols(path: Path, module_id: str = "") -> list[str]:
    """Global symbols; the module id (in anonymous namespaces' names: _GLOBAL__N_<id>, as with
    torch's headers) as @ID@."""
    r = subprocess.run(["nm", "--defined-only", "-g", str(path)], text=True,
                       stdout=subprocess.PIPE, check=True)
    names = (line.split()[-1] for line in r.stdout.splitlines() if line.strip())
    return sorted(n.replace(module_id, "@ID@") if module_id else n for n in names)


@pytest.mark.slow
@needs_nvcc
def test_scheduled_object_matches_plain_nvcc(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(KERNEL)
    plain = _nvcc(tmp_path, "-c", "k.cu", "-o", "plain.o", "--keep", "--keep-dir", ".")
    assert plain.returncode == 0, plain.stdout
    nvcc_id = (tmp_path / "k.module_id").read_text()
    # nvcc's own id pinned: byte for byte nvcc's object.
    _scheduled(tmp_path, "same.o", nvcc_id)
    assert (tmp_path / "same.o").read_bytes() == (tmp_path / "plain.o").read_bytes()
    # Our id (from the content key): the same symbols, and it links.
    ours = inline_nvcc.module_id_for("k.cu", "f" * 64)
    _scheduled(tmp_path, "ours.o", ours)
    assert _symbols(tmp_path / "ours.o", ours) == _symbols(tmp_path / "plain.o", nvcc_id)
    assert "launch_relu2" in _symbols(tmp_path / "ours.o")
    for name in ("plain", "ours"):
        link = _nvcc(tmp_path, "-shared", f"{name}.o", "-o", f"lib{name}.so")
        assert link.returncode == 0, link.stdout
    assert _symbols(tmp_path / "libours.so") == _symbols(tmp_path / "libplain.so")
    # Both chains read the pinned id: the device side names static entities with it.
    assert ours in (tmp_path / "keep-ours.o" / "k.cudafe1.gpu").read_text()


@pytest.mark.slow
@needs_nvcc
def test_worker_builds_cuda_unit_through_the_graph(tmp_path: Path) -> None:
    """A load_inline-style CUDA unit through the worker's Builder (its build sandbox when bwrap
    works): the graph ran with the module id pinned, and the cached object has plain nvcc's
    symbols and links."""
    from openkernel_worker import inline_build, sandbox

    src = tmp_path / "ext" / "cuda.cu"
    src.parent.mkdir()
    src.write_text(KERNEL)
    env = dict(os.environ, PATH=f"{os.path.dirname(str(NVCC))}:{os.environ.get('PATH', '')}")
    builder = inline_cache.Builder(str(tmp_path / "cache"), env,
                                   sandboxed=sandbox.probe("cpu").ok)
    command = (f"{NVCC} --generate-dependencies-with-compile --dependency-output @OUT@.d "
               f"{' '.join(FLAGS)} -c @IN@ -o @OUT@")
    unit = inline_build.Unit("cuda", str(src), str(src.parent / "cuda.cuda.o"), command)
    job = inline_build.Job(str(src.parent), [unit])
    obj, info = builder.unit(job, unit, str(src), [str(src.parent)])
    assert info["result"] == "built" and "module id pinned" in info["cuda_chains"], info
    plain = _nvcc(tmp_path / "ext", "-c", "cuda.cu", "-o", str(tmp_path / "plain.o"), "--keep",
                  "--keep-dir", str(tmp_path))
    assert plain.returncode == 0, plain.stdout
    ours = inline_nvcc.module_id_for(str(src), Path(obj).name[:-2])
    assert _symbols(Path(obj), ours) == \
        _symbols(tmp_path / "plain.o", (tmp_path / "cuda.module_id").read_text())
    link = _nvcc(tmp_path, "-shared", obj, "-o", "libworker.so")
    assert link.returncode == 0, link.stdout
    assert "launch_relu2" in _symbols(tmp_path / "libworker.so")
    again, info = builder.unit(job, unit, str(src), [str(src.parent)])  # the same unit again: a direct hit
    assert again == obj and info["result"] == "hit_direct", info
