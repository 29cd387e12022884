"""Large tensor-core GEMMs run far under the datasheet rate of the GPU: time-sliced with another process, clocks
held down, or a kernel built for an older GPU generation than the one it runs on."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import TRACE
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording
from gputriage.model.specs import GpuSpec
from gputriage.model.trace import KernelRow, rate_unit
from gputriage.trace import kernel_kinds as kk
from gputriage.trace.kernels import peak_dtype

SLOW_GEMM = Threshold(
    "slow_gemm_pct_of_peak",
    50.0,
    "% of the datasheet",
    "rate of large tensor-core GEMMs under which something slows them down",
    "recorded H200 traces: large bf16 GEMMs reach 68-78% of the dense datasheet",
)
SLOW_GEMM_MIN_US = Threshold(
    "slow_gemm_min_us",
    100.0,
    "µs",
    "kernels long enough that shape and launch effects do not explain a low rate",
    "judgement",
)
SLOW_GEMM_SHARE = Threshold(
    "slow_gemm_min_share_pct", 20.0, "% of kernel time", "kernel time such GEMMs must take to matter", "judgement"
)
WGMMA_MIN_MAJOR = Threshold(
    "wgmma_min_major",
    9,
    "compute capability (major)",
    "the first GPU generation (Hopper) whose tensor-core instructions (wgmma) a kernel built for an older one "
    "cannot use",
    "NVIDIA's PTX ISA: wgmma needs sm_90a",
)
SYMPTOM = "Large tensor-core GEMMs reach {achieved:.0f} {unit}, {pct_of_datasheet:.0f}% of the {gpu}'s {datasheet:g}"
# the GEMM kernel was built for an older GPU generation than the one it runs on
OLDER_ARCH = Wording(
    cause="The GEMM kernel was built for an older GPU generation ({built_for}): it cannot use this GPU's "
    "tensor-core instructions (Hopper's wgmma), so it runs at a fraction of the rate — the library has no kernel "
    "of this GPU's generation for this op and dtype (torch._int_mm's int8 on Hopper)",
    decision="Use an op with kernels for this GPU: fp8 through torch._scaled_mm on Hopper and newer, or a "
    "quantization library's kernels for this generation; update PyTorch (cuBLAS, CUTLASS); `gputriage bench` shows "
    "what the GPU reaches",
)


def slow(k: KernelRow, spec: GpuSpec) -> float | None:
    """The rate of a large tensor-core GEMM, in percent of the datasheet's, where it is slow; else None."""
    peak, rate = spec.tflops(peak_dtype(k.kind, k.dtype or "")), k.achieved_tflops
    if k.kind != kk.GEMM_TC or not peak or not rate or k.roof == "memory":
        return None
    if k.median_us < SLOW_GEMM_MIN_US.value or k.pct_of_kernel_time < SLOW_GEMM_SHARE.value:
        return None
    return 100 * rate / peak if 100 * rate / peak < SLOW_GEMM.value else None


def older_arch(kernel: str, spec: GpuSpec) -> str | None:
    """Where a kernel built for an older GPU generation runs on Hopper or newer (which it cannot use the tensor-core
    instructions of): what the name says, e.g. 'sm_80 code on compute capability 9.0'."""
    cc = str(spec.data.get("compute_capability") or "")
    built = kk.kernel_arch(kernel)
    try:
        major = int(cc.split(".")[0])
    except ValueError:
        return None
    first_of_this_generation = 10 * major  # sm_90 for compute capability 9.x
    if built is None or major < WGMMA_MIN_MAJOR.value:
        return None
    if "forwardCompat" not in kernel and built >= first_of_this_generation:
        return None
    return f"{'sm_' + str(built) if built else 'forward-compatible'} code on compute capability {cc}"


def evaluate(ev: RankEvidence) -> list[Finding]:
    spec = ev.spec
    if spec is None:
        return []
    for k in ev.analysis.kernels:
        pct = slow(k, spec)
        if pct is None:
            continue
        unit, older = rate_unit(k.dtype or ""), older_arch(k.name, spec)
        peak = spec.tflops(peak_dtype(k.kind, k.dtype or ""))
        evidence = {
            "kernel": k.name[:80],
            "achieved_tflops": k.achieved_tflops,
            "datasheet_tflops": peak,
            "median_us": k.median_us,
            "pct_of_kernel_time": k.pct_of_kernel_time,
        } | ({"built_for": older} if older else {})
        fill = {
            "achieved": k.achieved_tflops,
            "unit": unit,
            "pct_of_datasheet": pct,
            "gpu": spec.name,
            "datasheet": peak,
            "built_for": older,
        }
        say = ("older_arch" if older else "default") + ("_int8" if unit == "TOPS" else "")
        return [RULE.finding(evidence, subject=ev.subject, say=say, fill=fill)]
    return []


def _says() -> dict[str, Wording]:
    says = {}
    for name, words in (("default", Wording()), ("older_arch", OLDER_ARCH)):
        for suffix, tail in (("", ""), ("_int8", " for int8")):
            says[name + suffix] = Wording(symptom=SYMPTOM + tail, cause=words.cause, decision=words.decision)
    return says


RULE = Rule(
    FindingSpec(
        id="trace.slow_gemms",
        step=2,
        severity=Severity.warn,
        commands=TRACE,
        needs=("trace", "spec"),
        symptom="Large tensor-core GEMMs run far under the datasheet rate",
        cause="Kernels long enough to run at full rate run slowly: the GPU is time-sliced with another process, or "
        "its clocks are held down (power, thermal)",
        decision="Look for other processes on the GPU and clock-event reasons (`gputriage check`, or `gputriage "
        "run`, which sees both); compare with `gputriage bench`",
        condition="a tensor-core GEMM of >= {slow_gemm_min_us:g} µs taking >= {slow_gemm_min_share_pct:g}% of "
        "kernel time, not under the memory roof, reaches < {slow_gemm_pct_of_peak:g}% of the datasheet rate",
        thresholds=(SLOW_GEMM, SLOW_GEMM_MIN_US, SLOW_GEMM_SHARE),
        says=_says(),
    ),
    evaluate,
)
