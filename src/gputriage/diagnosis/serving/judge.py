"""A load test judged: each finished step's figures, the knee, the notes on what was not seen, and the findings —
the sweep made into one evidence object (`LoadEvidence`), every `load.*` rule evaluated over it, and the findings
finished as every judge's are (`diagnosis.finish`: the command that verifies a fix, the triage order)."""

from __future__ import annotations

import time
from typing import Optional, Sequence

from gputriage.diagnosis.finish import finish
from gputriage.diagnosis.rule import evaluate_all, rules_of
from gputriage.diagnosis.serving.evidence import LoadEvidence
from gputriage.diagnosis.serving.knee import knee
from gputriage.diagnosis.serving.stats import summarize
from gputriage.diagnosis.serving.steps import load_name
from gputriage.diagnosis.verify import Context
from gputriage.model.finding import Finding
from gputriage.model.load import Knee, LoadMeasurement, LoadReport, LoadStep, Slo


def findings(
    steps: Sequence[LoadStep],
    bandwidth_gbs: Optional[float] = None,
    weight_bytes: Optional[float] = None,
    *,
    slo: Optional[Slo] = None,
    at_knee: Optional[Knee] = None,
) -> list[Finding]:
    """Every `load.*` rule's findings over a sweep; steps in the order they ran (a sweep's is lightest first), a
    control step after the step it repeats. `bandwidth_gbs` and `weight_bytes` set decode against its memory
    ceiling."""
    evidence = LoadEvidence.of(steps, slo=slo, knee=at_knee, bandwidth_gbs=bandwidth_gbs, weight_bytes=weight_bytes)
    return evaluate_all(rules_of("serving"), evidence)


def judge(
    m: LoadMeasurement,
    bandwidth_gbs: Optional[float] = None,
    weight_bytes: Optional[float] = None,
    load_args: Sequence[str] = (),
) -> LoadReport:
    """The report of a measured load. `load_args`: `load`'s arguments, the URL first (the command that verifies a
    fix; the URL alone when not given)."""
    report = LoadReport(meta=m.meta, started_s=m.started_s, notes=list(m.notes), cut=m.cut)
    report.steps = [
        summarize(
            r,
            load_t0=m.load_t0_s,
            unix_offset=m.unix_offset_s,
            slo=m.meta.slo,
            gpu_samples=m.gpu_samples,
            gpu_totals=m.gpu_totals,
            server=m.server,
            server_pid=m.server_pid,
            thread_names=m.thread_names,
        )
        for r in m.steps
    ]
    report.notes = cut_note(m) + report.notes + unseen_gpus(report.steps) + whole_streams(report.steps)
    report.knee = knee(report.steps, m.meta.slo)
    found = findings(report.steps, bandwidth_gbs, weight_bytes, slo=m.meta.slo, at_knee=report.knee)
    report.findings = finish(found, Context("load", load_args=list(load_args) or [m.meta.url]))
    report.ended_s = time.time()
    return report


def cut_note(m: LoadMeasurement) -> list[str]:
    """Where a signal cut the sweep, and what of it is kept."""
    if m.cut is None:
        return []
    done = len(m.steps)
    kept = f"the {done} finished before it {'are' if done > 1 else 'is'} kept" if done else "no step had finished"
    return [f"the sweep was cut at step {m.cut.step} of {m.cut.steps} ({m.cut.signal}): {kept}"]


def unseen_gpus(steps: list[LoadStep]) -> list[str]:
    """No GPU sampled at any step: the server's GPUs are elsewhere."""
    if any(s.gpus for s in steps):
        return []
    return [
        "no GPU sampled here: the server's GPUs are not in this report (run `gputriage load` on "
        "the server's machine to see them)"
    ]


def whole_streams(steps: list[LoadStep]) -> list[str]:
    """Where most streams of a step arrived in one chunk (TPOT p50 0 ms over several tokens): the client did not
    read them as they came, so that step's TTFT holds the decode and its TPOT measures nothing."""
    hit = [s for s in steps if s.tpot.p50_ms == 0 and (s.output_tokens_mean or 0) > 1]
    if not hit:
        return []
    at = ", ".join(load_name(s) for s in hit)
    return [
        f"at {at}, most streams arrived in one chunk (TPOT 0 ms): this client did not read them as they came (its "
        "CPU busy?); TTFT there includes the decode, and no queueing is inferred from it"
    ]
