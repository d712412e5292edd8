"""integrity.is_library_kernel: which GPU kernels count as PyTorch's or a vendor library's for the
no_custom_kernel rule, and the candidate's own kernels that merely carry a library-like word."""
from openkernel_worker.integrity import defined_kernel_names, is_library_kernel

TRITON_SOURCE = '''
import triton

@triton.autotune(configs=[], key=["M"])
@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M):
    pass
'''

CUDA_SOURCE = r'''
template <typename T>
__global__ void __launch_bounds__(256, 2) batched_gemv(const T* __restrict__ a, T* y) {}

__global__
void flash_attention_fwd(
    const float* q, float* o) {}
__device__ float gemm_helper(float x) { return x; }
'''


def test_defined_names_cover_triton_and_cuda_kernels() -> None:
    assert "gemm_kernel" in defined_kernel_names(TRITON_SOURCE)
    names = defined_kernel_names(CUDA_SOURCE)
    assert {"batched_gemv", "flash_attention_fwd"} <= names
    assert "gemm_helper" not in names  # a __device__ function is no kernel
    assert "__launch_bounds__" not in names


def test_own_kernel_with_a_generic_library_word_is_custom() -> None:
    triton = defined_kernel_names(TRITON_SOURCE)
    cuda = defined_kernel_names(CUDA_SOURCE)
    assert not is_library_kernel("gemm_kernel", triton)
    assert not is_library_kernel("void batched_gemv<float>(float const*, float*)", cuda)
    assert not is_library_kernel("flash_attention_fwd(float const*, float*)", cuda)


def test_generic_word_without_a_definition_stays_library() -> None:
    # cuBLAS's own names: the candidate's source defines none of them.
    triton = defined_kernel_names(TRITON_SOURCE)
    assert is_library_kernel("gemv2T_kernel_val<int, int, float, float, 128, 16, 4, 4>(...)",
                             triton)
    assert is_library_kernel("gemmSN_TN_kernel<float, 128, 16, 2, 4>(...)", triton)
    assert is_library_kernel("gemm_kernel")  # no source known: judged by the name alone


def test_distinctive_markers_win_over_any_definition() -> None:
    # A cheat that defines a dummy kernel named like cuBLAS's gains nothing.
    fake = "@triton.jit\ndef sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32(x):\n  pass\n"
    defined = defined_kernel_names(fake)
    assert is_library_kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", defined)
    assert is_library_kernel("void at::native::elementwise_kernel<128, 4>(int, ...)",
                             frozenset({"elementwise_kernel"}))
    assert is_library_kernel("triton_poi_fused_relu_0", frozenset({"triton_poi_fused_relu_0"}))


def test_plain_custom_kernels() -> None:
    assert not is_library_kernel("relu_kernel")
    assert not is_library_kernel("_row_softmax(float*, float*, int)")


def test_only_jit_functions_and_global_kernels_count_as_defined() -> None:
    # A torch-only candidate cannot excuse cuBLAS's gemv kernel with a plain function of its name.
    source = ("def gemv2T_kernel_val(*args):\n    pass\n"
              "x = 1\n"
              "def gemmSN_TN_kernel():\n    pass\n"
              "@triton.jit\n# the kernel\ndef gemm_tile(a):\n    pass\n"
              "@jit\ndef gemv_small(a):\n    pass\n")
    defined = defined_kernel_names(source)
    assert defined == {"gemm_tile", "gemv_small"}
    assert is_library_kernel("gemv2T_kernel_val<int, int, float>(...)", defined)
    assert is_library_kernel("gemmSN_TN_kernel<float, 128>(...)", defined)
    assert not is_library_kernel("gemm_tile", defined)


def test_namespaced_kernel_names() -> None:
    defined = defined_kernel_names("namespace my_ns {\n__global__ void gemm_kernel(float* c) {}\n}")
    assert not is_library_kernel("void my_ns::gemm_kernel(float*)", defined)
    assert not is_library_kernel("(anonymous namespace)::gemm_kernel(float*)", defined)
    assert is_library_kernel("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(...)",
                             frozenset({"flash_fwd_kernel"}))
    assert is_library_kernel("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", frozenset())
