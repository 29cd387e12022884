"""`check --markdown`: a report to paste into an issue or a runbook."""

from __future__ import annotations

import datetime as dt

from gputriage.model.finding import STEPS, Finding
from gputriage.model.snapshot import Snapshot
from gputriage.report.check_json import summary
from gputriage.report.style import evidence_text


def render(snap: Snapshot, findings: list[Finding]) -> str:
    when = dt.datetime.fromtimestamp(snap.taken_at).isoformat(timespec="seconds") if snap.taken_at else "?"
    counts = summary(findings)["counts"]
    lines = [f"# gputriage check — {snap.hostname}", "",
             f"Taken {when}. {counts['critical']} critical, {counts['warn']} warnings, {counts['info']} info.", ""]
    for step, title in STEPS.items():
        lines.append(f"## {step}. {title}")
        lines.append("")
        in_step = [f for f in findings if f.step == step]
        if not in_step:
            lines += ["Nothing found.", ""]
        for f in in_step:
            lines += [f"- **{f.severity.name.upper()}** `{f.id}`{' (' + f.subject + ')' if f.subject else ''}: "
                      f"{f.symptom}",
                      f"  - why: {f.cause}", f"  - do: {f.decision}"]
            if f.evidence:
                lines.append(f"  - evidence: `{evidence_text(f.evidence)}`")
        lines.append("")
    return "\n".join(lines)
