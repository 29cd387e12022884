"""PSI CPU pressure: runnable tasks waiting for a core."""

from gputriage.diagnosis.check.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity

SOME_AVG10_PCT = 20.0


def evaluate(ev: Evidence) -> list[Finding]:
    psi = ev.get("host.psi.cpu.some_avg10_pct")
    if psi is not None and psi >= SOME_AVG10_PCT:
        return [RULE.finding(Severity.warn, {"host.psi.cpu.some_avg10_pct": psi,
                                             "host.cgroup.cpu_limit_cores": ev.get("host.cgroup.cpu_limit_cores")},
                             subject="host")]
    return []


RULE = Rule(
    id="cpu.pressure", step=4, severity=Severity.warn,
    symptom="Tasks wait for CPU time (PSI cpu pressure)",
    cause="More runnable threads than cores or than the cgroup quota allows: data-loader workers and the training "
          "loop are being descheduled",
    decision="Reduce oversubscription (num_workers, OMP/MKL threads) or raise the CPU quota",
    condition=f"/proc/pressure/cpu some avg10 >= {SOME_AVG10_PCT:.0f}%",
    evaluate=evaluate,
)
