"""What a trace's kernels are counted as: cuDNN's layout kernels are data movement, not slow tensor-core GEMMs
(a DataLoader-fed conv net recorded on an H200)."""

from __future__ import annotations

from gputriage import api
from gputriage.trace.kernel_kinds import ELEMENTWISE, GEMM_TC, kind_of_kernel
from recordings import FIXTURES


def test_a_layout_kernel_is_no_slow_gemm():
    # cuDNN's nchwToNhwcKernel (bf16) was counted as a tensor-core GEMM at "0 TFLOP/s": a slow-GEMM warning
    r = api.analyze_trace([FIXTURES / "traces" / "loader_pin_thread.json.gz"])
    assert "trace.slow_gemms" not in [f.id for f in r.findings]
    layout = next(k for k in r.ranks[0].kernels if "nchwToNhwc" in k.name)
    assert layout.kind == ELEMENTWISE and kind_of_kernel(layout.name, "c10::BFloat16") == ELEMENTWISE
    assert kind_of_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == GEMM_TC
