"""The honest corpus: every (reference, candidate) pair, its backend and the style it stands for.

README.md in this folder is the manifest a person reads; test_honest.py checks that it lists
exactly these cases. `group` batches the GPU cases for tests/gpu/run_h200_honest.sh, so that one
batch of cold `load_inline` builds (about 55 s each on the H200 host) fits one device call.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class HonestCase:
    reference: str
    candidate: str
    backend: str  # cpu, cuda or triton (the CLI's --backend)
    group: str  # cpu, cuda_a, cuda_b or triton
    style: str  # what the candidate stands for (one line; the README says more)

    @property
    def gpu(self) -> bool:
        return self.backend != "cpu"

    @property
    def limit_s(self) -> int:
        """Seconds one CLI evaluation may take: a cold load_inline build is most of it."""
        source = (HERE / self.candidate).read_text()
        return 420 if "load_inline(" in source else 240


CASES: dict[str, HonestCase] = {
    # CPU (default suite).
    "cpu_load_inline_rmsnorm": HonestCase(
        "ref_cpu_rmsnorm.py", "cand_cpu_load_inline.py", "cpu", "cpu",
        "load_inline C++ (cpp_sources + functions=[...]), at::parallel_for, a parameter"),
    "cpu_native_logsoftmax": HonestCase(
        "ref_cpu_logsoftmax.py", "cand_cpu_native_logsoftmax.py", "cpu", "cpu",
        "openkernel_worker.native.compile_cpp + ctypes, OpenMP"),
    "cpu_native_gather_pair": HonestCase(
        "ref_cpu_gather_pair.py", "cand_cpu_native_gather_pair.py", "cpu", "cpu",
        "compile_cpp: int64 index input, two outputs"),
    "cpu_native_transposed": HonestCase(
        "ref_cpu_col_softmax.py", "cand_cpu_native_transposed.py", "cpu", "cpu",
        "compile_cpp on a transposed copy, returns the non-contiguous view y.t()"),
    # CUDA load_inline, batch a.
    "cuda_legacy_stream": HonestCase(
        "ref_mul_add.py", "cand_cuda_legacy_stream.py", "cuda", "cuda_a",
        "<<<grid, block>>> with no stream (legacy default stream), torch::zeros_like, int index"),
    "cuda_dispatch_fp32": HonestCase(
        "ref_gelu_tanh_fp32.py", "cand_cuda_dispatch.py", "cuda", "cuda_a",
        "templated __restrict__ kernel, AT_DISPATCH float/half/bf16, current stream, torch::empty"),
    "cuda_dispatch_fp16": HonestCase(
        "ref_gelu_tanh_fp16.py", "cand_cuda_dispatch.py", "cuda", "cuda_a",
        "the same extension on float16 inputs"),
    "cuda_dispatch_bf16": HonestCase(
        "ref_gelu_tanh_bf16.py", "cand_cuda_dispatch.py", "cuda", "cuda_a",
        "the same extension on bfloat16 inputs"),
    "cuda_ptx_pair": HonestCase(
        "ref_split_sign.py", "cand_cuda_ptx_pair.py", "cuda", "cuda_a",
        "inline PTX (ld.global.nc, max.f32, min.f32), two outputs as a std::vector"),
    # CUDA load_inline, batch b.
    "cuda_gather_int64": HonestCase(
        "ref_embedding.py", "cand_cuda_gather_int64.py", "cuda", "cuda_b",
        "int64 index input (embedding gather), 64-bit offsets, CUDA_KERNEL_ASSERT"),
    "cuda_bf16_native": HonestCase(
        "ref_silu_bf16.py", "cand_cuda_bf16.py", "cuda", "cuda_b",
        "bfloat16 via __nv_bfloat162 intrinsics, torch::zeros, --use_fast_math"),
    "cuda_conv_epilogue": HonestCase(
        "ref_conv_bias_relu.py", "cand_cuda_conv_epilogue.py", "cuda", "cuda_b",
        "PyTorch Conv2d + custom in-place bias/ReLU epilogue, parameters"),
    "cuda_softmax_shared": HonestCase(
        "ref_softmax_rows.py", "cand_cuda_softmax_shared.py", "cuda", "cuda_b",
        "reduction: dynamic shared memory, warp shuffles, templated block size"),
    # Triton.
    "triton_autotune": HonestCase(
        "ref_gelu_tanh_fp32.py", "cand_triton_autotune.py", "triton", "triton",
        "@triton.autotune, four configs, key=['n_elements']"),
    "triton_views": HonestCase(
        "ref_channel_softmax.py", "cand_triton_views.py", "triton", "triton",
        ".permute().contiguous(), .reshape, .view around the kernel; returns a permuted view"),
    "triton_transposed": HonestCase(
        "ref_col_softmax.py", "cand_triton_transposed.py", "triton", "triton",
        "softmax reduction on x.t().contiguous(); returns the non-contiguous view y.t()"),
    "triton_row_sum": HonestCase(
        "ref_row_sum.py", "cand_triton_row_sum.py", "triton", "triton",
        "reduction: row sum with a tile loop and float32 accumulation"),
    "triton_glu_slice": HonestCase(
        "ref_glu.py", "cand_triton_glu_slice.py", "triton", "triton",
        "writes into a row-padded buffer, returns the slice buf[:, :half]"),
    "triton_gemm_named": HonestCase(
        "ref_matmul_fp16.py", "cand_triton_gemm_named.py", "triton", "triton",
        "tl.dot matmul whose kernel is named gemm_kernel (a library-like name)"),
    "triton_wide_output": HonestCase(
        "ref_matmul_small_k_fp16.py", "cand_triton_gemm_named.py", "triton", "triton",
        "the same tl.dot matmul with K = 32: outputs 512 times the inputs (2 GiB a forward)"),
}
