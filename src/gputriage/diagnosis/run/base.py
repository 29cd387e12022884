"""What a monitored run's rules read (`diagnosis.run.rules`): one `RunEvidence` per judgement, gathered once
(`gather.gather`) from the recording, the command's exit code, the profile, and the verdict stage's outcome — each
GPU's verdict, the merged verdict, whether the command failed before a steady state, the workload's Python stacks,
the processes on its GPUs with their owners, its throughput, the allocator snapshots its workload saved (judged); a
distributed job's ranks side by side."""

from __future__ import annotations

from dataclasses import dataclass, field

from gputriage.diagnosis.run.rank_causes import RanksEvidence
from gputriage.diagnosis.run.snapshots import Judged
from gputriage.model.finding import Finding
from gputriage.model.recording import Recording
from gputriage.model.run import (
    GpuStatic,
    GpuVerdict,
    HostStacks,
    LoaderWorkers,
    ProcessSummary,
    ProfileReport,
    RunVerdict,
    Throughput,
)
from gputriage.model.window import Windows

RUN = ("run", "watch", "monitor")  # the commands that judge a monitored run


@dataclass
class RunEvidence:
    """One run's evidence. `verdicts`: each GPU the workload used, judged over its steady state (the verdict stage
    states each verdict in its own words afterwards); `failed_early_s`: the seconds a command ran that failed before a
    steady state (None: it had one); `trace_findings`: the merged trace's findings, as the run reports them."""

    rec: Recording
    exit_code: int | None
    verdicts: dict[int, GpuVerdict]
    verdict: RunVerdict
    failed_early_s: float | None = None
    profile: ProfileReport | None = None
    held_s: list[tuple[float, float]] = field(default_factory=list)  # when the profiler held the workload (unix s)
    stacks: HostStacks | None = None
    processes: list[ProcessSummary] = field(default_factory=list)
    throughput: Throughput | None = None
    trace_findings: list[Finding] = field(default_factory=list)
    ranks: RanksEvidence | None = None  # a distributed job's ranks compared (`rank_compare`), its hangs
    oom_snapshot: Judged | None = None  # the allocator's snapshot at its first out-of-memory error, judged
    growth_snapshot: Judged | None = None  # the latest saved while its live memory grew, judged
    loader: LoaderWorkers | None = None  # its DataLoader's workers, their CPU and the cores they share

    @property
    def workload(self) -> bool:
        """A command gputriage ran (`run`), not a GPU watched or a block of code (`watch`, `monitor()`)."""
        return self.rec.kind == "run"

    @property
    def watched(self) -> bool:
        """A GPU watched (`watch`): what it follows is the GPU, not a run."""
        return self.rec.kind == "watch"

    @property
    def steady(self) -> bool:
        """The command reached a steady state (it did not fail before one)."""
        return self.failed_early_s is None

    @property
    def started_s(self) -> float:
        return self.rec.started_s or 0.0

    @property
    def ended_s(self) -> float:
        return self.rec.ended_s or 0.0

    @property
    def run_s(self) -> float:
        return self.ended_s - self.started_s

    @property
    def host(self) -> Windows:
        return self.rec.windows.host

    def series(self, gpu: int) -> Windows:
        return self.rec.windows.series[gpu]

    def static(self, gpu: int) -> GpuStatic:
        return self.rec.static.get(gpu, GpuStatic())

    @property
    def lead(self) -> GpuVerdict | None:
        """The verdict of the first GPU the workload used: the one its timeline, regimes and throughput follow."""
        return next(iter(self.verdicts.values()), None)
