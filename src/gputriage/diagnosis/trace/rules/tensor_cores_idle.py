"""GEMMs run on CUDA cores (fp32 without TF32) at a fraction of the tensor cores' rate."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.trace import kernel_kinds as kk


def evaluate(ev: RankEvidence) -> list[Finding]:
    share = ev.busy_pct(kk.GEMM_OTHER)
    if share < FINDING_MIN.value:
        return []
    names = [k.name[:60] for k in ev.analysis.kernels if k.kind == kk.GEMM_OTHER][:2]
    return [
        RULE.finding(
            {"gemm_cuda_cores_pct": share, "gemm_tensor_cores_pct": ev.busy_pct(kk.GEMM_TC)},
            subject=ev.subject,
            fill={"gemm_cuda_cores_pct": share, "kernels": ", ".join(names)},
        )
    ]


RULE = Rule(
    FindingSpec(
        id="trace.tensor_cores_idle",
        **verdict_words(B.tensor_cores_idle),
        severity=Severity.warn,
        commands=TRACE,
        condition="GEMMs on CUDA cores >= {finding_min_pct:g}% of the window",
        thresholds=(FINDING_MIN,),
        needs=("trace",),
        says={
            "default": Wording(
                symptom="GEMMs on CUDA cores take {gemm_cuda_cores_pct}% of the window",
                cause="Full-precision fp32 math without TF32 runs on CUDA cores at a fraction of the tensor-core rate: "
                "{kernels}",
            )
        },
    ),
    evaluate,
)
