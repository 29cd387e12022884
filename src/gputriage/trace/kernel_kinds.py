"""What a GPU activity is, from its name (and the dtype of the op that launched it)."""

from __future__ import annotations

import re

GEMM_TC = "gemm_tensor_core"
GEMM_OTHER = "gemm_other"  # GEMMs on CUDA cores (fp32 without TF32)
GEMM_FP64 = "gemm_fp64"  # double precision: DMMA tensor cores on A100/H100/H200/B200, CUDA cores elsewhere
GEMV = "gemv"  # matrix-vector products: memory-bound by nature (batch-1 inference)
ATTENTION = "attention"
ELEMENTWISE = "elementwise_reduction"
COMM = "communication"
H2D_PAGEABLE, H2D_PINNED = "memcpy_h2d_pageable", "memcpy_h2d_pinned"
D2H_PAGEABLE, D2H_PINNED = "memcpy_d2h_pageable", "memcpy_d2h_pinned"
D2D, MEMCPY_OTHER, MEMSET = "memcpy_d2d", "memcpy_other", "memset"
BUSY_KINDS = (
    GEMM_TC,
    GEMM_OTHER,
    GEMM_FP64,
    GEMV,
    ATTENTION,
    ELEMENTWISE,
    COMM,
    H2D_PAGEABLE,
    H2D_PINNED,
    D2H_PAGEABLE,
    D2H_PINNED,
    D2D,
    MEMCPY_OTHER,
    MEMSET,
)

_COMM = re.compile(r"nccl|ncclDevKernel|all_?reduce|allgather|reduce_?scatter|sendrecv", re.I)
_ATTN = re.compile(r"flash|fmha|attention|sdpa|mha_|xformers|cutlass.*attn", re.I)
_GEMV = re.compile(r"gemv|gemmSN|dot_kernel", re.I)
_FP64_GEMM = re.compile(r"dgemm|zgemm|dmma|f64f64|_d884|_z884", re.I)
_CUDA_CORE_GEMM = re.compile(r"sgemm|dgemm|ffma|gemmk1|_f32f32_f32f32_f32_(?!.*tf32)", re.I)
_TC = re.compile(
    r"hmma|wgmma|gmma|tensorop|884|1688|16816|16832|imma|bf16|f16|fp16|h16|tf32|e4m3|e5m2|"
    r"nvjet|xmma_gemm_(?:bf|f16|e4)|sm\d+_xmma.*(?:h|bf)gemm|cutlass.*(?:bf16|f16)|s16816",
    re.I,
)
_LAYOUT = re.compile(r"(?:nchw|nhwc)To(?:nhwc|nchw)\w*Kernel", re.I)  # cuDNN's layout conversions: data movement
_GEMM = re.compile(r"gemm|matmul|xmma|cutlass|nvjet|gemv|dot_kernel|conv|implicit_?gemm|cudnn", re.I)
HALF_DTYPES = {"c10::Half", "c10::BFloat16", "c10::Float8_e4m3fn", "c10::Float8_e5m2"}


def kind_of_kernel(name: str, launch_dtype: str = "") -> str:
    if _COMM.search(name):
        return COMM
    if _ATTN.search(name):
        return ATTENTION
    if _GEMV.search(name):
        return GEMV
    if _GEMM.search(name) and not _LAYOUT.search(name):
        if _FP64_GEMM.search(name) or launch_dtype in ("double", "c10::complex<double>"):
            return GEMM_FP64
        if _CUDA_CORE_GEMM.search(name):
            return GEMM_OTHER
        if _TC.search(name) or launch_dtype in HALF_DTYPES:
            return GEMM_TC
        return GEMM_OTHER
    return ELEMENTWISE


def kind_of_memcpy(name: str) -> str:
    """Kineto names: 'Memcpy HtoD (Pageable -> Device)', 'Memcpy DtoH (Device -> Pinned)', 'Memcpy DtoD ...'."""
    if "HtoD" in name:
        return H2D_PAGEABLE if "Pageable" in name else H2D_PINNED
    if "DtoH" in name:
        return D2H_PAGEABLE if "Pageable" in name else D2H_PINNED
    if "DtoD" in name or "PtoP" in name:
        return D2D
    return MEMCPY_OTHER


_ARCH = re.compile(r"(?:^|[^a-z0-9])(?:sm_?|cutlass_)(\d{2,3})_|(ampere|volta|turing)_|(forwardCompat)", re.I)
_ARCH_NAMES = {"volta": 70, "turing": 75, "ampere": 80}


def kernel_arch(name: str) -> int | None:
    """The GPU generation a kernel was built for, where its name says (sm80_xmma_…: 80, ampere_…: 80;
    CUTLASS's forwardCompat kernels: 0, an older generation than the GPU's); None when it does not."""
    m = _ARCH.search(name)
    if m is None:
        return None
    if m.group(1):
        return int(m.group(1))
    return _ARCH_NAMES[m.group(2).lower()] if m.group(2) else 0


def uses_tensor_cores(kind: str) -> bool:
    return kind in (GEMM_TC, ATTENTION)
