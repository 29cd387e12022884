"""Kernel names and kinds as a person reads them in a table."""

from __future__ import annotations

import re

SHORT_KIND = {
    "gemm_tensor_core": "gemm·TC",
    "gemm_other": "gemm·32",
    "gemm_fp64": "gemm·64",
    "gemv": "gemv",
    "attention": "attn",
    "elementwise_reduction": "elem",
    "communication": "comm",
}
_WORD = re.compile(r"([A-Za-z_]\w*)\s*(?:<|\(|,|>|$)")
_SKIP = {
    "at",
    "native",
    "void",
    "int",
    "float",
    "char",
    "std",
    "array",
    "unsigned",
    "long",
    "const",
    "bool",
    "c10",
    "Half",
    "BFloat16",
    "double",
    "operator",
    "lambda",
    "TensorIteratorBase",
    "type",
    "enable_if",
    "detail",
    "ReduceOp",
    "AUnaryFunctor",
    "BUnaryFunctor",
    "BinaryFunctor",
    "TensorListMetadata",
    "cutlass",
    "Kernel",
    "binary_internal",
    "internal",
    "true",
    "false",
    "func_wrapper_t",
}


def short_name(name: str) -> str:
    """A readable kernel name: the kernel, and for templated kernels (PyTorch's elementwise ones,
    CUTLASS) the first meaningful name among their template arguments — the op they run."""
    text = (name[5:] if name.startswith("void ") else name).replace("(anonymous namespace)::", "")
    head, _, inner = text.partition("<")
    base = head.split("(", 1)[0].split("::")[-1].strip()
    if not inner:
        return base
    for m in _WORD.finditer(inner):
        word = m.group(1)
        if word != base and word not in _SKIP and not word.isdigit() and len(word) > 2:
            return f"{base}[{word}]"
    return base
