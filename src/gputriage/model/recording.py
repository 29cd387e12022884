"""What a monitored session collected, as the judge reads it: the run's metadata, each GPU's windows and the
host's, the processes seen, the last samples. Bounded whatever the run's length."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol

from gputriage.model.compile import CompileStats
from gputriage.model.memory import MemoryDump
from gputriage.model.owner import ProcessOwner
from gputriage.model.ranks import RankSeries
from gputriage.model.run import GpuStatic, ProcessSummary, RunMeta
from gputriage.model.sample import HangEvent, Sample, StackCounts
from gputriage.model.window import Windows


class WindowedRun(Protocol):
    """A run cut into windows: each GPU's series, the host's, and the processes tallied over the run."""

    @property
    def series(self) -> Mapping[int, Windows]: ...

    @property
    def host(self) -> Windows: ...

    @property
    def first_t(self) -> float | None: ...

    @property
    def last_t(self) -> float | None: ...

    @property
    def count(self) -> int: ...

    def processes(self) -> list[ProcessSummary]: ...

    def stack_snapshots(self) -> list[tuple[float, StackCounts]]: ...  # (unix s, the stack sampler's top lines)


@dataclass
class Recording:
    """What a session collected: enough to judge the run, bounded whatever its length."""

    kind: str
    command: list[str]
    meta: RunMeta
    gpus: list[int]
    windows: WindowedRun
    recent: list[Sample] = field(default_factory=list)  # the last samples (the sampler's ring)
    run_id: int | None = None
    store_error: str | None = None
    compile: CompileStats | None = None  # what torch.compile did in the workload, as it reported it
    owners: dict[int, ProcessOwner] = field(default_factory=dict)  # who the processes on the GPUs are, by pid
    memory: list[MemoryDump] = field(default_factory=list)  # the allocator snapshots the workload saved (OOM first)
    ranks: list[RankSeries] = field(default_factory=list)  # a distributed job's ranks, each cut into windows
    hangs: list[HangEvent] = field(default_factory=list)  # the hangs of its ranks said while it ran

    @property
    def static(self) -> dict[int, GpuStatic]:
        return {int(k): v for k, v in self.meta.gpus.items()}

    @property
    def started_s(self) -> float | None:
        return self.windows.first_t

    @property
    def ended_s(self) -> float | None:
        return self.windows.last_t
