"""GPU-Util high while the SMs are mostly idle: nvidia-smi's 100% proves nothing."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.thresholds import UNDERFILLED_SM, UNDERFILLED_UTIL
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        util, sm = ev.gpu(i, "util.gpu_pct"), ev.gpu(i, "gpm.sm_active_pct")
        if util is not None and sm is not None and util >= UNDERFILLED_UTIL.value and sm < UNDERFILLED_SM.value:
            out.append(
                RULE.finding(
                    {
                        f"gpu.{i}.util.gpu_pct": util,
                        f"gpu.{i}.gpm.sm_active_pct": sm,
                        f"gpu.{i}.gpm.sm_occupancy_pct": ev.gpu(i, "gpm.sm_occupancy_pct"),
                    },
                    severity=Severity.warn,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="util.busy_but_sms_idle",
        step=2,
        severity=Severity.warn,
        symptom="nvidia-smi shows the GPU busy, but most SMs are idle",
        cause="GPU-Util counts time with any kernel running, not how much of the chip works: kernels too small to fill "
        "the SMs (small batch, tiny ops, one stream)",
        decision="Give each launch more work: larger batch or sequence length, fuse small ops (torch.compile), "
        "CUDA graphs; then watch SM activity, not GPU-Util",
        commands=CHECK,
        condition="GPU-Util >= {underfilled_util_pct:g}% and GPM SM activity < {underfilled_sm_active_pct:g}%",
        thresholds=(UNDERFILLED_UTIL, UNDERFILLED_SM),
        needs=("gpu",),
    ),
    evaluate,
)
