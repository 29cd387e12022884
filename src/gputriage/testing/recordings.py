"""Recorded runs loaded, replayed into a recording and judged again by today's rules: the runs cut from run
stores (`runs_*.json.gz`, by `benchmarks/store_to_fixture.py`), whole runs in the earlier untyped layout
(`run_samples.json.gz`) and flat NVML streams of one GPU (`scenario_samples.json`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec

from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.gather import gather
from gputriage.diagnosis.run.judge import judge
from gputriage.model.compile import CompileStats
from gputriage.model.recording import Recording
from gputriage.model.run import GpuStatic, ProfileReport, RunMeta, RunReport
from gputriage.model.sample import Sample
from gputriage.sampling.session import replay
from gputriage.testing.recorded import from_flat_rows, from_untyped

# the H200 the streams and the untyped runs were recorded on (they kept no static facts of their own)
H200_STATIC = GpuStatic(
    name="NVIDIA H200",
    memory_total_bytes=150754820096,
    power_limit_mw=700000,
    power_default_mw=700000,
    pcie_gen_max=5,
    pcie_width_max=16,
)


def load_runs(path: Path) -> dict[str, Any]:
    """A fixture's recorded runs by name (a JSON object, gzipped when the name ends in .gz)."""
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def recorded(rec: dict[str, Any]) -> Recording:
    """A recorded run's samples replayed into windows (a `watch` as a watch: `kind`), with what torch.compile did
    as the workload reported it."""
    out = replay(
        [msgspec.convert(s, Sample) for s in rec["samples"]],
        msgspec.convert(rec["meta"], RunMeta),
        command=rec.get("command") or [],
        kind=rec.get("kind", "run"),
    )
    if rec.get("compile"):
        out.compile = msgspec.convert(rec["compile"], CompileStats)
    return out


def judged(rec: dict[str, Any]) -> RunReport:
    """A recorded run judged again, with the profile its report had (its trace's verdict as recorded)."""
    profile = msgspec.convert(rec["profile"], ProfileReport) if rec.get("profile") else None
    return judge(recorded(rec), rec.get("exit_code"), profile=profile)


def judged_samples(samples: list[Sample], static: GpuStatic = H200_STATIC, kind: str = "run", **kw: Any) -> RunReport:
    """The run judge's report over samples of GPU 0 recorded without their run's metadata."""
    return judge(replay(samples, RunMeta(gpus={"0": static}), kind=kind), 0, **kw)


def judged_untyped(rec: dict[str, Any]) -> RunReport:
    """A whole run recorded in the earlier untyped layout, judged again."""
    return judged_samples(from_untyped(rec["samples"]))


def judged_stream(rec: dict[str, Any]) -> RunReport:
    """A flat NVML stream of one GPU (no host side), judged again."""
    return judged_samples(from_flat_rows(rec["samples"]))


def evidence(rec: Recording, exit_code: int | None = None, profile: ProfileReport | None = None) -> RunEvidence:
    """A recording's evidence as the run's rules read it, its GPUs judged (`diagnosis.run.gather`)."""
    return gather(rec, exit_code, profile)


JUDGES = {"store": judged, "untyped": judged_untyped, "stream": judged_stream}
