"""A load test judged: each finished step's figures, the knee, the findings, the notes on what was not seen."""

from __future__ import annotations

import time
from typing import Optional

from gputriage.diagnosis.serving.findings import findings
from gputriage.diagnosis.serving.knee import knee
from gputriage.diagnosis.serving.stats import summarize
from gputriage.diagnosis.serving.steps import load_name
from gputriage.model.load import LoadMeasurement, LoadReport, LoadStep


def judge(
    m: LoadMeasurement, bandwidth_gbs: Optional[float] = None, weight_bytes: Optional[float] = None
) -> LoadReport:
    """The report of a measured load; `bandwidth_gbs` and `weight_bytes` set decode against its memory ceiling."""
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
    if m.cut is not None:
        done = len(report.steps)
        kept = f"the {done} finished before it {'are' if done > 1 else 'is'} kept" if done else "no step had finished"
        report.notes.insert(0, f"the sweep was cut at step {m.cut.step} of {m.cut.steps} ({m.cut.signal}): {kept}")
    if not any(s.gpus for s in report.steps):
        report.notes.append(
            "no GPU sampled here: the server's GPUs are not in this report (run `gputriage load` on "
            "the server's machine to see them)"
        )
    report.notes += whole_streams(report.steps)
    report.knee = knee(report.steps, m.meta.slo)
    report.findings = findings(report.steps, bandwidth_gbs, weight_bytes)
    report.ended_s = time.time()
    return report


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
