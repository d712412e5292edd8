"""Run-time integrity probes that need the candidate's own process: which ops and kernels its
forward runs, whether it changed global torch state, and whether it set up a persisting-L2 window.

These run inside the (untrusted) candidate process, so a candidate that patches torch could hide
from them; they catch the common cases (fallback to PyTorch, global flags) and are one layer of
several (docs/evaluation.md). The worker decides what the findings mean.
"""
from __future__ import annotations

import ctypes
import glob
import os
import re
import time
from typing import Any, Callable

# aten ops that allocate, view or move data without computing the result.
NON_COMPUTE_OPS = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "new_empty", "new_zeros", "view", "reshape", "_reshape_alias", "_unsafe_view",
    "as_strided", "contiguous", "clone", "copy_", "to", "_to_copy", "detach", "alias", "resize_",
    "t", "transpose", "permute", "expand", "select", "slice", "unsqueeze", "squeeze", "flatten",
    "view_as", "lift_fresh", "numel", "size", "stride", "is_contiguous", "item", "_local_scalar_dense",
    "set_", "record_stream", "fill_", "zero_", "narrow", "unbind", "split", "chunk", "cat", "stack",
    "data_ptr", "result_type", "empty_strided_cuda", "_empty_affine_quantized", "dim", "type_as",
    "resolve_conj", "resolve_neg", "_conj", "conj", "_neg_view", "lift", "_has_compatible_shallow_copy_type",
}
# Kernel name fragments of PyTorch's own and vendor library kernels. The distinctive ones name a
# library whatever the candidate's source says.
LIBRARY_KERNEL_MARKERS = (
    "at::native", "at_cuda_detail", "cublas", "cutlass", "xmma", "cudnn", "sm90_",
    "sm80_", "ampere_", "volta_", "turing_", "hopper_", "cub::", "thrust::", "cunn_", "Memset",
    "Memcpy", "nchwToNhwc", "nhwcToNchw", "implicit_convolve", "splitKreduce", "cuBLAS",
    "triton_poi_fused", "triton_red_fused", "triton_per_fused", "nvjet", "pytorch_flash",
)
# Generic words that library kernels carry (cuBLAS's gemv2T_kernel, gemmSN_TN_kernel; PyTorch's
# elementwise_kernel, reduce_kernel) but that honest kernels are named with too: a kernel whose
# name holds one is a library kernel unless the candidate's own source defines a kernel of that
# name (an honest Triton `gemm_kernel` was taken for cuBLAS before this rule).
GENERIC_KERNEL_MARKERS = ("gemm", "gemv", "flash", "elementwise_kernel", "reduce_kernel",
                          "softmax_warp")
_GLOBAL_KERNEL = re.compile(r"__global__[^;{(]*?\b([A-Za-z_]\w*)[ \t\n]*\(")  # CUDA kernels
_PY_DEF = re.compile(r"[ \t]*def[ \t]+([A-Za-z_]\w*)[ \t]*\(")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")


def set_precision_policy() -> None:
    """Full float32 precision for matmuls and convolutions (no TF32). The worker sets it before
    running the reference and the candidate process before importing the candidate, so both sides
    start from the same flags; PyTorch's own default lets cuDNN convolutions use TF32, which would
    hand a candidate that merely calls the vendor op a free precision downgrade. A candidate that
    changes the flags itself is reported as global_state_changed."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")


def global_state() -> dict[str, Any]:
    import torch

    state: dict[str, Any] = {"default_dtype": str(torch.get_default_dtype()),
                             "num_threads": torch.get_num_threads()}
    if hasattr(torch.backends, "cuda"):
        state["matmul_allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
    if hasattr(torch.backends, "cudnn"):
        state["cudnn_allow_tf32"] = bool(torch.backends.cudnn.allow_tf32)
    if hasattr(torch, "get_float32_matmul_precision"):
        state["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    return state


def _op_name(key: str) -> str:
    return key.split("::", 1)[1] if key.startswith("aten::") else key


def outputs_written_by_torch(fn: Callable[..., Any], inputs: list[Any]) -> list[bool]:
    """For each output of one forward: was its memory last produced by a PyTorch compute op?
    (Tracked with a dispatch mode over aten calls; a custom kernel writes outside aten.)"""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    produced: dict[int, str] = {}

    class Tracker(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            packet = getattr(func, "_overloadpacket", None)
            name = getattr(packet, "__name__", str(func)).split(".")[0].lstrip("_")
            if name not in NON_COMPUTE_OPS and name.rstrip("_") not in NON_COMPUTE_OPS:
                for t in out if isinstance(out, (tuple, list)) else [out]:
                    if isinstance(t, torch.Tensor):
                        produced[t.data_ptr()] = name
            return out

    with torch.no_grad(), Tracker():
        result = fn(*inputs)
    outs = result if isinstance(result, (tuple, list)) else [result]
    return [isinstance(t, torch.Tensor) and t.data_ptr() in produced for t in outs]


def profile_forward(fn: Callable[..., Any], inputs: list[Any], device: str) -> dict[str, Any]:
    """One forward under torch.profiler: aten ops with self time, and GPU kernels."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    with torch.no_grad():
        fn(*inputs)  # warm, so lazy compiles are not profiled
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        with profile(activities=activities) as prof:
            t0 = time.perf_counter()
            fn(*inputs)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            forward_us = (time.perf_counter() - t0) * 1e6
    ops: list[dict[str, Any]] = []
    kernels: list[dict[str, Any]] = []
    for evt in prof.key_averages():
        key = evt.key
        if key.startswith("aten::"):
            ops.append({"name": _op_name(key), "self_cpu_us": float(evt.self_cpu_time_total),
                        "count": int(evt.count)})
    for evt in prof.events():
        dev_type = str(getattr(evt, "device_type", ""))
        if "CUDA" in dev_type and not evt.name.startswith("aten::"):
            kernels.append({"name": evt.name[:200],
                            "us": float(getattr(evt, "device_time", 0.0) or
                                        getattr(evt, "cuda_time", 0.0) or 0.0)})
    try:
        by_torch = outputs_written_by_torch(fn, inputs)
    except Exception:  # noqa: BLE001 - a candidate may not run under a dispatch mode
        by_torch = []
    return {"ops": ops, "kernels": kernels, "forward_cpu_us": forward_us,
            "outputs_by_torch": by_torch}


def defined_kernel_names(source: str) -> frozenset[str]:
    """Names of the kernels a candidate's source defines: `__global__` functions and Python
    functions whose innermost decorator is a jit (`@triton.jit`, `@jit`). Kernel names built at
    run time are not seen (they stay judged by their name alone)."""
    text = _LAUNCH_BOUNDS.sub(" ", source or "")
    names = set(_GLOBAL_KERNEL.findall(text))
    above = ""  # the last line with code before this one
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _PY_DEF.match(line)
        if m and above.startswith("@") and "jit" in above:
            names.add(m.group(1))
        above = stripped
    return frozenset(names)


def _kernel_base(name: str) -> str:
    """`gemm_kernel` of `void ns::gemm_kernel<float>(float const*, ...)` or of `gemm_kernel`."""
    text = name.strip().replace("(anonymous namespace)::", "")
    for prefix in ("void ", "__global__ "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    head = re.split(r"[<(\s]", text, maxsplit=1)[0]
    return head.rsplit("::", 1)[-1]


def is_library_kernel(name: str, defined: frozenset[str] = frozenset()) -> bool:
    """Whether a GPU kernel is PyTorch's or a vendor library's: a distinctive marker, or a
    generic one on a kernel the candidate's source does not define (`defined`, from
    defined_kernel_names)."""
    if any(marker in name for marker in LIBRARY_KERNEL_MARKERS):
        return True
    if any(marker in name for marker in GENERIC_KERNEL_MARKERS):
        return _kernel_base(name) not in defined
    return False


def _cudart() -> Any:
    import torch

    patterns = [os.path.join(os.path.dirname(torch.__file__), "lib", "libcudart.so*")]
    try:
        import nvidia  # type: ignore[import-not-found]

        for base in getattr(nvidia, "__path__", []):
            patterns.append(os.path.join(base, "*", "lib", "libcudart.so*"))
    except ImportError:
        pass
    patterns += ["/usr/local/cuda/lib64/libcudart.so*", "/usr/lib/x86_64-linux-gnu/libcudart.so*"]
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    return None


def persisting_l2_bytes() -> int | None:
    """cudaLimitPersistingL2CacheSize of the current device, or None when unreadable."""
    lib = _cudart()
    if lib is None:
        return None
    value = ctypes.c_size_t(0)
    if lib.cudaDeviceGetLimit(ctypes.byref(value), ctypes.c_int(0x06)) != 0:
        lib.cudaGetLastError()  # our own failed query: not left for the candidate's check
        return None
    return int(value.value)


def pending_cuda_error() -> str | None:
    """The CUDA runtime error the calling thread has pending, cleared, as "name (text)"; None
    when there is none or the runtime cannot be read. A failed runtime call a candidate makes
    itself (through ctypes, a C++ extension) leaves its error pending until the next launch
    checks for one: read here right after the candidate's import and construction, it is named
    as the candidate's, not as whatever ran next (the reference's get_inputs)."""
    lib = _cudart()
    if lib is None:
        return None
    code = int(lib.cudaGetLastError())
    if code == 0:
        return None
    lib.cudaGetErrorName.restype = ctypes.c_char_p
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    name = (lib.cudaGetErrorName(ctypes.c_int(code)) or b"").decode(errors="replace")
    text = (lib.cudaGetErrorString(ctypes.c_int(code)) or b"").decode(errors="replace")
    return f"{name or code} ({text})" if text else str(name or code)


def reset_persisting_l2() -> None:
    lib = _cudart()
    if lib is not None:
        lib.cudaCtxResetPersistingL2Cache()
