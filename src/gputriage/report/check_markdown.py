"""`check --markdown`: a report to paste into an issue or a runbook."""

from __future__ import annotations

from gputriage.model.check import CheckReport
from gputriage.model.finding import STEPS
from gputriage.report.style import evidence_text, local_time


def render(report: CheckReport) -> str:
    when = local_time(report.taken_at, "%Y-%m-%dT%H:%M:%S")
    counts = report.summary.counts
    findings = report.findings
    lines = [
        f"# gputriage check — {report.hostname}",
        "",
        f"Taken {when}. {counts['critical']} critical, {counts['warn']} warnings, {counts['info']} info.",
        "",
    ]
    for step, title in STEPS.items():
        lines.append(f"## {step}. {title}")
        lines.append("")
        in_step = [f for f in findings if f.step == step]
        if not in_step:
            lines += ["Nothing found.", ""]
        for f in in_step:
            lines += [
                f"- **{f.severity.value.upper()}** `{f.id}`{' (' + f.subject + ')' if f.subject else ''}: {f.symptom}",
                f"  - why: {f.cause}",
                f"  - do: {f.decision}",
            ]
            if f.verify:
                lines.append(f"  - verify: `{f.verify}`")
            if f.evidence:
                lines.append(f"  - evidence: `{evidence_text(f.evidence)}`")
        lines.append("")
    return "\n".join(lines)
