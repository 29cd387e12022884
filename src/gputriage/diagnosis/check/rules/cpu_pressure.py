"""PSI CPU pressure: runnable tasks waiting for a core."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold

SOME_AVG10 = Threshold(
    "cpu_psi_some_avg10_pct",
    20.0,
    "%",
    "Share of the last 10 s in which some runnable task waited for a core (PSI), from which the CPU is short",
    "Linux PSI (Documentation/accounting/psi.rst): 'some' is the share of time at least one task stalled; judgement "
    "for 20%: a data-loader worker descheduled a fifth of the time delays its batches",
)


def evaluate(ev: Evidence) -> list[Finding]:
    psi = ev.get("host.psi.cpu.some_avg10_pct")
    if psi is not None and psi >= SOME_AVG10.value:
        return [
            RULE.finding(
                {
                    "host.psi.cpu.some_avg10_pct": psi,
                    "host.cgroup.cpu_limit_cores": ev.get("host.cgroup.cpu_limit_cores"),
                },
                severity=Severity.warn,
                subject="host",
            )
        ]
    return []


RULE = Rule(
    FindingSpec(
        id="cpu.pressure",
        step=4,
        severity=Severity.warn,
        symptom="Tasks wait for CPU time (PSI cpu pressure)",
        cause="More runnable threads than cores or than the cgroup quota allows: data-loader workers and the training "
        "loop are being descheduled",
        decision="Reduce oversubscription (num_workers, OMP/MKL threads) or raise the CPU quota",
        commands=CHECK,
        condition="/proc/pressure/cpu some avg10 >= {cpu_psi_some_avg10_pct:g}%",
        thresholds=(SOME_AVG10,),
    ),
    evaluate,
)
