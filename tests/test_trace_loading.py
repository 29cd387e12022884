"""From a trace, input only where it was seen: the DataLoader's own events (`enumerate(DataLoader)#..__next__`) over
the GPU's idle gaps say the GPU waited for input; where the window shows the loader and it does not cover the gaps,
they are the loop's own host work (a training framework's hooks, its logging); a window with no loader event leaves
its host work outside framework ops unnamed: input_starved by elimination, which says so. Each on a recorded H200
trace, edited to hold the case."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

from gputriage import api

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress((TRACES / f"{name}.json.gz").read_bytes()))
    return data


def judged(tmp_path: Path, data: dict[str, Any]) -> Any:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return api.analyze_trace([path])


def with_loader(data: dict[str, Any], spans: list[tuple[float, float]]) -> dict[str, Any]:
    """The trace with DataLoader events on the thread that launches the GPU's work, over each (start, end)."""
    events = data["traceEvents"]
    launches = Counter((e["pid"], e["tid"]) for e in events if e.get("cat") == "cuda_runtime")
    (pid, tid), _ = launches.most_common(1)[0]
    loader = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            "pid": pid,
            "tid": tid,
            "ts": a,
            "dur": b - a,
        }
        for a, b in spans
    ]
    return {**data, "traceEvents": events + loader}


def gpu_span(data: dict[str, Any]) -> tuple[float, float]:
    gpu = [e for e in data["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    return min(e["ts"] for e in gpu), max(e["ts"] + e["dur"] for e in gpu)


def idle_of(report: Any) -> dict[str, float]:
    return {k: v.pct for k, v in report.ranks[0].anatomy[0].idle.items() if v.pct}


def test_host_work_no_event_names_is_input_by_elimination_and_says_so() -> None:
    """input_starved.py reads and decodes its batches in the loop, no DataLoader: the trace sees the host outside
    framework ops, nothing says doing what."""
    report = api.analyze_trace([TRACES / "input_starved.json.gz"])
    assert report.verdict.bottleneck.value == "input_starved" and report.verdict.by_elimination
    assert idle_of(report).get("host_outside_ops", 0) > 80
    finding = next(f for f in report.findings if f.id == "trace.input_starved")
    assert "by elimination" in finding.cause


def test_gaps_the_dataloaders_events_cover_are_input_seen(tmp_path: Path) -> None:
    data = recorded("input_starved")
    report = judged(tmp_path, with_loader(data, [(gpu_span(data)[0] - 1e6, gpu_span(data)[1] + 1e6)]))
    assert report.verdict.bottleneck.value == "input_starved" and not report.verdict.by_elimination
    idle = idle_of(report)
    assert idle.get("host_loading", 0) > 80 and idle.get("host_outside_ops", 0) < 5  # the window's idle end alone
    finding = next(f for f in report.findings if f.id == "trace.input_starved")
    assert "DataLoader" in finding.symptom


def test_with_the_loader_seen_elsewhere_the_gaps_are_the_loops_own_host_work(tmp_path: Path) -> None:
    """The same gaps, the loader's events a microsecond long before the window's work: the input came quickly, the
    host then worked outside framework ops on its own: host_bound, not input_starved — by elimination still (what
    it did there, the trace does not see)."""
    data = recorded("input_starved")
    start = gpu_span(data)[0]
    report = judged(tmp_path, with_loader(data, [(start - 10.0, start - 9.0)]))
    assert report.verdict.bottleneck.value == "host_bound" and report.verdict.by_elimination
    assert idle_of(report).get("host_loop", 0) > 80
    finding = next(f for f in report.findings if f.id == "trace.host_bound")
    assert "loop's own host work" in finding.cause


def test_a_loader_whose_main_thread_waits_on_its_workers_is_input_seen() -> None:
    """loader_pin_thread.py, recorded: the main thread waits in the DataLoader's `__next__` for its workers."""
    report = api.analyze_trace([TRACES / "loader_pin_thread.json.gz"])
    assert report.verdict.bottleneck.value == "input_starved" and not report.verdict.by_elimination
    assert idle_of(report).get("host_loading", 0) > 80
