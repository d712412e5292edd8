"""The toolchain versions the worker reports in hello (and so in every result's `versions`, which
the trace export reads): triton, the NVIDIA driver and nvcc, parsed from their real formats."""
from __future__ import annotations

from openkernel_worker import device

PROC_VERSION = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release "
                "Build  (dvs-builder@U16-I3-B03-4-3)  Thu Jan  9 14:13:59 UTC 2025\n"
                "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
PROC_VERSION_OLD = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 "
                    "19:39:15 UTC 2024\n")
NVCC = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
        "Built on Thu_Mar_28_02:18:24_PDT_2024\nCuda compilation tools, release 12.4, V12.4.131\n"
        "Build cuda_12.4.r12.4/compiler.34097967_0\n")


def test_driver_version_from_proc() -> None:
    assert device.nvidia_driver_version(PROC_VERSION) == "570.86.15"
    assert device.nvidia_driver_version(PROC_VERSION_OLD) == "535.183.01"
    assert device.nvidia_driver_version("garbage") is None


def test_nvcc_version_from_its_banner() -> None:
    assert device.nvcc_version(NVCC) == "12.4.131"
    assert device.nvcc_version("Cuda compilation tools, release 11.8") == "11.8"
    assert device.nvcc_version("") is None


def test_hello_reports_the_toolchain() -> None:
    v = device.hello()["versions"]
    for key in ("python", "torch", "triton", "driver", "nvcc"):
        assert key in v
    for key in ("triton", "driver", "nvcc"):
        assert v[key] is None or isinstance(v[key], str)
