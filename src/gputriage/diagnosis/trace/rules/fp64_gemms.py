"""Double-precision GEMMs take much of the window: the precision the code asks for, at the GPU's fp64 rate."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.trace import kernel_kinds as kk

SYMPTOM = "fp64 GEMMs take {gemm_fp64_pct}% of the window"


def evaluate(ev: RankEvidence) -> list[Finding]:
    share = ev.busy_pct(kk.GEMM_FP64)
    if share < FINDING_MIN.value:
        return []
    rates = [k.achieved_tflops for k in ev.analysis.kernels if k.kind == kk.GEMM_FP64 and k.achieved_tflops]
    best = max(rates) if rates else None
    return [
        RULE.finding(
            {"gemm_fp64_pct": share, "achieved_tflops": best},
            subject=ev.subject,
            say="with_rate" if best is not None else "default",
            fill={"gemm_fp64_pct": share, "achieved_tflops": best},
        )
    ]


RULE = Rule(
    FindingSpec(
        id="trace.fp64_gemms",
        step=2,
        severity=Severity.info,
        commands=TRACE,
        needs=("trace",),
        symptom="Double-precision GEMMs take much of the window",
        cause="fp64 matrix products run at the GPU's fp64 rate: on A100, H100, H200 and B200 its fp64 tensor cores "
        "(about a fifteenth of bf16's rate), on GeForce, RTX and L4/L40 parts CUDA cores at 1/64 of fp32",
        decision="Keep fp64 where the computation needs it (solvers, ill-conditioned systems); where it does not, "
        "TF32 (torch.backends.cuda.matmul.allow_tf32 = True on fp32) or bf16 run an order of magnitude faster, and "
        "mixed-precision refinement keeps fp64 accuracy for linear solves",
        condition="fp64 GEMMs >= {finding_min_pct:g}% of the window",
        thresholds=(FINDING_MIN,),
        says={
            "default": Wording(symptom=SYMPTOM),
            "with_rate": Wording(symptom=SYMPTOM + " (up to {achieved_tflops:.1f} TFLOP/s)"),
        },
    ),
    evaluate,
)
