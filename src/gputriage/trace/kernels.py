"""The kernel table: top kernels by time, with count, duration statistics, tensor-core use, and
where the launching op's shapes are known, achieved FLOP/s, bytes, arithmetic intensity and
whether that puts the kernel under the memory or the compute roof.

Bytes are estimated from the recorded input shapes (each input read once, the output written
once); an op that passes the same tensor twice (`y * y`) is counted twice, so its GB/s reads high.
"""

from __future__ import annotations

from typing import Any

from gputriage.model.numbers import median
from gputriage.model.specs import GpuSpec
from gputriage.model.trace import INT8, KernelRow
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.load import KERNEL, MEMCPY, Columns


def gpu_kinds(cols: Columns) -> list[str]:
    """The kind of every GPU activity (kernel kinds use the launching op's dtype)."""
    cache: dict[tuple[int, int, int], str] = {}
    out = []
    for name, kind, cost in zip(cols.g_name, cols.g_kind, cols.gpu_costs()):
        dtype = cost[2] if cost is not None else -1
        key = (name, kind, dtype)
        k = cache.get(key)
        if k is None:
            text = cols.names[name]
            if kind == KERNEL:
                k = kk.kind_of_kernel(text, cols.names[dtype] if dtype >= 0 else "")
            elif kind == MEMCPY:
                k = kk.kind_of_memcpy(text)
            else:
                k = kk.MEMSET
            cache[key] = k
        out.append(k)
    return out


def peak_dtype(kind: str, op_dtype: str) -> str:
    """Which datasheet rate bounds a kernel: tensor-core kernels by their operands' dtype (fp32 operands
    on tensor cores mean TF32, int8 ones the INT8 rate in TOPS), everything else the fp32 CUDA-core rate."""
    if kind not in (kk.GEMM_TC, kk.ATTENTION):
        return "fp32"
    if "Float8" in op_dtype:
        return "fp8"
    if op_dtype == INT8:  # torch._int_mm: the datasheet's INT8 TOPS
        return "int8"
    if op_dtype == "c10::Half":
        return "fp16"
    if op_dtype == "float":
        return "tf32"
    return "bf16"


def table(cols: Columns, kinds: list[str], spec: GpuSpec | None, top: int = 15) -> list[KernelRow]:
    groups: dict[int, dict[str, Any]] = {}
    counted_ops: set[int] = set()
    for name, kind, dur, op, cost, gk in zip(
        cols.g_name, kinds, cols.g_dur, cols.gpu_ops(), cols.gpu_costs(), cols.g_kind
    ):
        if gk != KERNEL:
            continue
        g = groups.get(name)
        if g is None:
            g = groups[name] = {"durs": [], "kind": kind, "flops": 0.0, "bytes": 0.0, "timed_us": 0.0, "dtype": ""}
        g["durs"].append(dur)
        if op is not None and cost is not None and op not in counted_ops and (cost[0] or cost[1]):
            counted_ops.add(op)  # an op's cost goes to the first kernel it launched
            g["flops"] += cost[0]
            g["bytes"] += cost[1]
            g["timed_us"] += dur
            g["dtype"] = cols.names[cost[2]]
    total = sum(sum(g["durs"]) for g in groups.values()) or 1.0
    rows = []
    for name_id, g in sorted(groups.items(), key=lambda kv: -sum(kv[1]["durs"]))[:top]:
        durs = g["durs"]
        t = sum(durs)
        row: dict[str, Any] = {
            "name": cols.names[name_id],
            "kind": g["kind"],
            "tensor_cores": kk.uses_tensor_cores(g["kind"]),
            "count": len(durs),
            "total_us": round(t, 1),
            "pct_of_kernel_time": round(100 * t / total, 1),
            "mean_us": round(t / len(durs), 2),
            "median_us": round(median(durs), 2),
            "max_us": round(max(durs), 2),
        }
        if g["dtype"]:
            row["dtype"] = g["dtype"]
        if g["timed_us"] > 0 and (g["flops"] or g["bytes"]):
            secs = g["timed_us"] / 1e6
            row["achieved_tflops"] = round(g["flops"] / secs / 1e12, 2) if g["flops"] else None
            row["achieved_gbs"] = round(g["bytes"] / secs / 1e9, 1) if g["bytes"] else None
            if g["flops"] and g["bytes"]:
                ai = g["flops"] / g["bytes"]
                row["flop_per_byte"] = round(ai, 2)
                ridge = spec.ridge_flop_per_byte(peak_dtype(g["kind"], g["dtype"])) if spec else None
                if ridge:
                    row["ridge_flop_per_byte"] = round(ridge, 1)
                    row["roof"] = "memory" if ai < ridge else "compute"
        rows.append(KernelRow(**row))
    return rows
