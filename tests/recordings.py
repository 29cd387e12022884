"""Recorded H200 runs (`tests/fixtures/h200/runs_*.json.gz`) by fixture name, and the replay helpers of
`gputriage.testing.recordings` they are judged with; runs of a workload's progress on a driven clock, judged and kept
in a run store as `gputriage run --store` keeps them (`paced`, `keep`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from gputriage.diagnosis.run.judge import judge
from gputriage.model.run import RunMeta, RunReport
from gputriage.model.sample import Sample, WorkloadSample
from gputriage.sampling.session import replay
from gputriage.sampling.store import Store
from gputriage.testing.recordings import H200_STATIC, judged, judged_samples, load_runs, recorded

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
T0 = 1_800_000_000.0

__all__ = ["FIXTURES", "H200_STATIC", "judged", "judged_samples", "keep", "paced", "recorded", "runs"]


def runs(name: str) -> dict[str, Any]:
    """A fixture's recorded runs by name."""
    return load_runs(FIXTURES / name)


def paced(samples_per_s: float, seconds: float = 3.0, period_s: float = 0.2, t0: float = T0) -> list[Sample]:
    """A CPU workload's samples on a driven clock: every `period_s`, what it reported through `gputriage.step()`
    (8 samples a step) at `samples_per_s`."""
    steps = round(seconds / period_s)
    return [
        Sample(
            t_s=t0 + i * period_s,
            workload=WorkloadSample(
                cpu_pct=4.0, steps_total=samples_per_s / 8 * i * period_s, samples_total=samples_per_s * i * period_s
            ),
        )
        for i in range(steps + 1)
    ]


def keep(
    store: Path, samples: list[Sample], command: list[str], then: Callable[[RunReport], None] | None = None
) -> RunReport:
    """A run judged from its samples and kept in the store, its samples with it; `then` acts on its report before
    it is kept (`run --baseline`: compared with a baseline)."""
    db = Store(store)
    try:
        meta = RunMeta(cwd="/home/user/job")
        run_id = db.begin_run("run", command, meta)
        db.add_samples(run_id, samples)
        report = judge(replay(samples, meta, command=command, run_id=run_id), 0)
        if then is not None:
            then(report)
        db.end_run(report)
        return report
    finally:
        db.close()
