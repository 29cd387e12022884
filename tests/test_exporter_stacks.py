"""The exporter's `/stacks`: the Python stacks of the processes on the GPUs, dumped with py-spy when asked (never on a
scrape), classified as `watch` classifies them; gputriage_pyspy_available says once, at the start, whether py-spy
can; where it cannot, plain words. A real py-spy on a real Python process the test starts, as the GPU's only
process on a replayed H200."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
import pytest

from gputriage.testing.stream_nvml import StreamNvml

pytest.importorskip("prometheus_client")

FIXTURES = Path(__file__).parent / "fixtures"
WORKLOAD = FIXTURES / "cpu" / "pyspy_workload.py"  # main thread waits on a queue, "helper" computes, "feeder" sleeps
BUSY = [
    r
    for r in json.loads((FIXTURES / "h200" / "scenario_samples.json").read_text())["healthy_bf16"]["samples"]
    if r["util"] >= 90
]


class Holding(StreamNvml):
    """A replayed H200 whose compute processes are `pids`, 1 GiB each."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(BUSY)
        self.pids = pids

    def call(self, fn: str, index: int | None = None, *args: Any) -> Any:
        if fn == "nvmlDeviceGetComputeRunningProcesses":
            return [{"pid": p, "usedGpuMemory": 2**30} for p in self.pids]
        return super().call(fn, index, *args)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read().decode()


def _pyspy_gauge(url: str) -> list[tuple[dict[str, str], float]]:
    from prometheus_client.parser import text_string_to_metric_families

    fams = {f.name: f for f in text_string_to_metric_families(_get(url))}
    return [(s.labels, s.value) for s in fams["gputriage_pyspy_available"].samples]


def _served(make_host, pids: list[int]):
    """The exporter as `gputriage exporter` wires it, its GPU's processes listed once, serving (no sampler)."""
    from gputriage.api.exporter import exporter

    ex = exporter(port=0, check_every_s=0, nvml=Holding(pids), host=make_host()).open()
    ex.sampler.recent.append(ex.sampler.sample_once())
    ex.judge_once()  # lists the processes on the GPU
    return ex.serve()


def test_the_stacks_of_a_python_process_on_the_gpu_are_dumped_when_asked(make_host, monkeypatch):
    import gputriage.exporter.server as server

    proc = subprocess.Popen([sys.executable, str(WORKLOAD), "120"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        ex = _served(make_host, [proc.pid])
        try:
            gauge = _pyspy_gauge(ex.url)
            if gauge != [({"reason": "", "Hostname": gauge[0][0]["Hostname"]}, 1.0)]:
                why = json.loads(_get(ex.stacks_url)).get("why")
                if os.environ.get("GPUTRIAGE_REQUIRE_PYSPY") == "1":
                    pytest.fail(f"GPUTRIAGE_REQUIRE_PYSPY=1: {gauge} {why}")
                pytest.skip(f"py-spy cannot read processes here: {why}")
            calls = []
            real = server.dump_stacks
            monkeypatch.setattr(server, "dump_stacks", lambda pids: calls.append(pids) or real(pids))
            for _ in range(3):
                _get(ex.url)
            assert calls == []  # a scrape never pauses the processes
            got = json.loads(_get(ex.stacks_url))
            assert calls == [[proc.pid]]
        finally:
            ex.stop()
    finally:
        proc.kill()
        proc.wait()
    assert got["available"] is True and got["dumps"] == 1 and got["processes"] == [proc.pid]
    assert got["every_s"] == 0.0  # one dump, on demand
    assert set(got["main_shares"]) <= {"input_wait", "host_compute"} and sum(got["main_shares"].values()) == 1.0
    ours = [x for x in got["lines"] if x["file"].endswith("pyspy_workload.py")]
    assert ours and {x["category"] for x in ours} <= {"input_wait", "host_compute"}
    assert any(not x.get("main", True) and x["function"] == "compute" for x in ours)  # the helper thread's loop
    msgspec.json.decode(json.dumps(got).encode(), type=server.PySpyStacks)  # watch's own model


def test_without_py_spy_the_gauge_and_stacks_say_so_plainly(make_host, monkeypatch, tmp_path):
    """py-spy neither on the PATH nor beside the interpreter (where a virtual environment installs it)."""
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.setattr(sys, "executable", str(bare / "python"))
    ex = _served(make_host, [os.getpid()])
    try:
        assert _pyspy_gauge(ex.url) == [({"reason": "not_installed", "Hostname": ex.state().hostname}, 0.0)]
        assert json.loads(_get(ex.stacks_url)) == {
            "available": False,
            "why": "py-spy is not installed (pip install py-spy)",
        }
    finally:
        ex.stop()


def test_with_no_process_on_the_gpus_the_stacks_say_so(make_host):
    ex = _served(make_host, [])
    try:
        got = json.loads(_get(ex.stacks_url))
    finally:
        ex.stop()
    if not got["available"]:
        assert os.environ.get("GPUTRIAGE_REQUIRE_PYSPY") != "1", got["why"]
        pytest.skip(got["why"])
    assert got["why"] == "no process holds a GPU now" and got.get("dumps", 0) == 0


def test_requests_that_arrive_during_a_round_share_it():
    """Three requests, the second and third arriving while the first's dump runs: one dump (each pauses the
    processes), the same answer to all three; an error reaches every waiter; the next request dumps again."""
    import threading

    from gputriage.exporter.stacks import SharedRound

    entered, release, calls = threading.Event(), threading.Event(), []

    def dump() -> object:
        calls.append(1)
        entered.set()
        assert release.wait(60)
        if len(calls) == 2:
            raise OSError("py-spy died")
        return object()

    for expect_error in (False, True):
        shared, got = SharedRound(dump), []
        entered.clear()
        release.clear()

        def ask(round_: SharedRound = shared) -> None:
            try:
                got.append(round_())
            except OSError as exc:
                got.append(exc)

        first = threading.Thread(target=ask)
        first.start()
        assert entered.wait(60)
        others = [threading.Thread(target=ask) for _ in range(2)]
        for t in others:
            t.start()
        for _ in range(6000):  # until both wait on the round under way (no timing assumed)
            if shared.waiting == 2:
                break
            threading.Event().wait(0.01)
        assert shared.waiting == 2
        release.set()
        for t in (first, *others):
            t.join(60)
        assert len(got) == 3 and len({id(x) for x in got}) == 1 and shared.waiting == 0
        assert isinstance(got[0], OSError) == expect_error
    assert len(calls) == 2  # one round each time
