"""What a framework op costs, from the input shapes and dtypes the profiler recorded (`record_shapes`):
FLOPs (2·M·N·K for a matrix product, one per output element otherwise) and the bytes its inputs and
output occupy (each read or written once)."""

from __future__ import annotations

from typing import Any, Optional

DTYPE_BYTES = {
    "float": 4,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "double": 8,
    "long int": 8,
    "int": 4,
    "unsigned char": 1,
    "signed char": 1,
    "bool": 1,
    "short int": 2,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "c10::complex<float>": 8,
}


GEMM_OPS = {
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
    "aten::_scaled_mm",
    "aten::_int_mm",
}
OUT_DTYPE = {"aten::_int_mm": "int"}  # int8 operands, int32 result


def _numel(dims: Any) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def op_cost(name: str, dims: Any, types: Any) -> tuple[float, float, str]:
    """(FLOPs, bytes touched, dtype) of a framework op from its recorded input shapes; 0 when unknown."""
    if not isinstance(dims, list):
        return 0.0, 0.0, ""
    tensors = [
        (d, t) for d, t in zip(dims, types or []) if isinstance(d, list) and d and all(isinstance(x, int) for x in d)
    ]
    dtype = tensors[0][1] if tensors else ""
    nbytes = float(sum(_numel(d) * DTYPE_BYTES.get(t, 4) for d, t in tensors))
    flops = 0.0
    try:
        if name in GEMM_OPS and len(tensors) >= 2:
            shapes = [d for d, _ in tensors]
            if name in ("aten::addmm", "aten::baddbmm") and len(shapes) >= 3:
                shapes = shapes[1:]
            a, b = shapes[0], shapes[1]
            if name == "aten::linear":  # weight is [out, in]
                flops = 2.0 * _numel(a[:-1]) * a[-1] * b[0]
            else:
                flops = 2.0 * _numel(a[:-1]) * a[-1] * b[-1]
            out_elems = _numel(a[:-1]) * (b[0] if name == "aten::linear" else b[-1])
            nbytes += out_elems * DTYPE_BYTES.get(OUT_DTYPE.get(name, dtype), 4)
        elif tensors:
            out = max(_numel(d) for d, _ in tensors)
            flops = float(out)  # ~one operation per output element
            nbytes += out * DTYPE_BYTES.get(dtype, 4)
    except (TypeError, ValueError, IndexError):
        return 0.0, nbytes, dtype
    return flops, nbytes, dtype


# ops that never launch GPU work themselves (views, allocations, and composite ops that dispatch to recorded
# inner ops, which launch): their cost is never read, and their shapes are not kept (`columns._shape_ids`)
NEVER_LAUNCH = frozenset(
    {
        "aten::as_strided",
        "aten::t",
        "aten::transpose",
        "aten::view",
        "aten::_unsafe_view",
        "aten::_reshape_alias",
        "aten::reshape",
        "aten::alias",
        "aten::slice",
        "aten::select",
        "aten::expand",
        "aten::permute",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::narrow",
        "aten::split",
        "aten::chunk",
        "aten::unbind",
        "aten::detach",
        "detach",
        "aten::lift_fresh",
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::result_type",
        "aten::empty",
        "aten::empty_strided",
        "aten::empty_like",
        "aten::resize_",
        "aten::linear",
        "aten::matmul",
        "aten::to",
        "aten::_to_copy",
        "aten::layer_norm",
        "aten::contiguous",
        "aten::flatten",
        "aten::unflatten",
    }
)


def split_shape(shape: tuple[bytes, Optional[float]]) -> tuple[bytes, bytes, Optional[float]]:
    """An entry of `Columns.shapes`: the op's input dims and input types (JSON, empty where not recorded), and the
    FLOPs the profiler counted."""
    dims, _, types = shape[0].partition(b"\0")
    return dims, types, shape[1]
