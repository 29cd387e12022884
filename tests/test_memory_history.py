"""The allocator's snapshot saved from inside a Python workload under `run` (`inworkload.memory_history`): the
allocation stacks armed when the allocator holds most of the device or its live bytes keep rising, the snapshot and
its marker written at an out-of-memory error with the stack that asked, the error raised as it would have been; the
sampler reading the processes on the GPU as soon as it sees the marker; the files kept when the run's folder goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gputriage.inworkload import memory_history as mh
from gputriage.inworkload import progress
from gputriage.model.sample import GpuProcess
from gputriage.sampling.oom_marks import OomMarks, dump_of, dumps, keep
from gputriage.sampling.progress import ProgressReader
from gputriage.sampling.sampler import Cadences, Sampler
from gputriage.testing.stream_nvml import StreamNvml
from gputriage.trace import inject

GIB = 1 << 30
SCENARIOS = json.loads((Path(__file__).parent / "fixtures" / "h200" / "scenario_samples.json").read_text())

# a torch whose CUDA is initialized, as the allocator thread finds it: its allocator holds more and more of an
# 80 GiB device, then `empty` (torch's code, in a file under torch/) asks for 96 GiB and the observer is called
FAKE_TORCH = textwrap.dedent("""
    import importlib.machinery, json, os, sys, types
    __spec__._initializing = False
    stats = {"num_alloc_retries": 0, "num_device_alloc": 0, "num_device_free": 0, "num_ooms": 0,
             "reserved_bytes": {"all": {"current": 0}}, "allocated_bytes": {"all": {"current": 0}}}
    observers, calls = [], []
    def _record(*args, **kwargs):
        calls.append(kwargs)
        with open(os.environ["HISTORY_LOG"], "a") as fh:
            fh.write(json.dumps({"t": stats["reserved_bytes"]["all"]["current"], **kwargs}) + "\\n")
    def _snapshot():
        return {"segments": [{"device": 0, "total_size": stats["reserved_bytes"]["all"]["current"], "blocks": []}],
                "device_traces": [[]], "recorded": len(calls)}
    cuda = types.SimpleNamespace(
        is_initialized=lambda: True, device_count=lambda: 1,
        mem_get_info=lambda i: ((80 << 30) - stats["reserved_bytes"]["all"]["current"], 80 << 30),
        get_device_properties=lambda i: types.SimpleNamespace(total_memory=80 << 30),
        memory=types.SimpleNamespace(memory_stats_as_nested_dict=lambda i: stats,
                                     _record_memory_history=_record, _snapshot=_snapshot))
    _C = types.SimpleNamespace(_cuda_hasPrimaryContext=lambda i: True,
                               _cuda_attach_out_of_memory_observer=observers.append)
    def empty(n):
        for obs in observers:
            obs(0, n, 80 << 30, 1 << 30)
        raise RuntimeError("CUDA out of memory. Tried to allocate %d bytes" % n)
""")

WORKLOAD = textwrap.dedent("""
    import os, sys, time
    import torch
    while not torch.observers:
        time.sleep(0.02)
    for gib in range(0, 80, 4):  # the allocator fills the device
        torch.stats["reserved_bytes"]["all"]["current"] = gib << 30
        torch.stats["allocated_bytes"]["all"]["current"] = gib << 30
        time.sleep(0.15)
    def forward():
        return torch.empty(96 << 30)  # the planted request: line 11
    forward()
""")


@pytest.fixture()
def workload(tmp_path):
    site = tmp_path / "site" / "torch"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(FAKE_TORCH)
    script = tmp_path / "train.py"
    script.write_text(WORKLOAD)
    folder = tmp_path / "progress"
    folder.mkdir()
    env, hooks = inject.prepare_hooks(dict(os.environ))
    env["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + str(tmp_path / "site")
    env[progress.DIR_ENV] = str(folder)
    env["HISTORY_LOG"] = str(tmp_path / "history.log")
    env.pop(mh.HISTORY_ENV, None)
    yield script, folder, env, tmp_path
    inject.clean(hooks)


def test_at_an_out_of_memory_error_the_snapshot_and_its_marker_are_saved_and_the_error_is_raised(workload):
    script, folder, env, tmp = workload
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "RuntimeError: CUDA out of memory. Tried to allocate" in r.stderr  # untouched
    (marker,) = [n for n in os.listdir(folder) if n.startswith(mh.OOM_PREFIX) and n.endswith(mh.MARK)]
    mark = json.loads((folder / marker).read_text())
    assert mark["requested_bytes"] == 96 * GIB and mark["capacity_bytes"] == 80 * GIB
    assert mark["device_free_bytes"] == GIB and mark["pid"] > 0
    # the stack that asked: torch's `empty`, then the workload's line, gputriage's own frames left out
    asks = next(i for i, text in enumerate(FAKE_TORCH.splitlines(), 1) if "obs(0, n," in text)
    assert [(Path(f[0]).name, f[1], f[2]) for f in mark["stack"][:2]] == [
        ("__init__.py", asks, "empty"),
        ("train.py", 11, "forward"),
    ]
    dump = dump_of(folder / marker)
    assert dump is not None and dump.kind == "oom" and Path(dump.snapshot).exists()
    # the history was armed once the allocator held 75% of the device, with Python stacks and a bounded ring
    armed = [json.loads(line) for line in (tmp / "history.log").read_text().splitlines()]
    assert armed[0] == {
        "t": armed[0]["t"],
        "enabled": "all",
        "context": "alloc",
        "stacks": "python",
        "max_entries": mh.MAX_ENTRIES,
    }
    assert armed[0]["t"] >= mh.ARM_USED_SHARE * 80 * GIB
    assert mark["history"].startswith("GPU 0 was") and mark["history"].endswith("full")


def test_history_off_records_no_stacks_and_still_saves_the_snapshot(workload):
    script, folder, env, tmp = workload
    env[mh.HISTORY_ENV] = "off"
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert not (tmp / "history.log").exists()
    (d,) = dumps(folder)
    assert d.history == "off" and d.requested_bytes == 96 * GIB


class _Torch:
    """What `Watch` asks of torch, in this process: a device of 100 GiB, `used` of it in use."""

    def __init__(self) -> None:
        self.recorded: list[dict] = []
        self.snapshots = 0
        self.cuda = self
        self.memory = self
        self.used = 0

    def mem_get_info(self, i: int) -> tuple[int, int]:
        return 100 * GIB - self.used, 100 * GIB

    def get_device_properties(self, i: int):  # type: ignore[no-untyped-def]
        return type("P", (), {"total_memory": 100 * GIB})()

    def _record_memory_history(self, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.recorded.append(kwargs)

    def _snapshot(self) -> dict:
        self.snapshots += 1
        return {"segments": []}


def test_live_bytes_rising_between_steps_arm_the_stacks_and_save_growth_snapshots(tmp_path):
    torch = _Torch()
    watch = mh.Watch(str(tmp_path), torch, clock=_Clock())
    live = 10 * GIB
    reads = 0
    while not torch.recorded:  # each slice's trough 2 GiB above the last: 3 slices in a row arm it
        for k in range(mh.SLICE_READS):
            watch.observe(0, 20 * GIB, live + (k % 2) * 5 * GIB)  # steps: up and down
            reads += 1
        live += 2 * GIB
        assert reads < 100 * mh.SLICE_READS
    assert reads == (mh.RISING_SLICES + 1) * mh.SLICE_READS
    assert "rose" in watch.armed
    high = live - 2 * GIB + 5 * GIB  # the read that armed it: the top of the last slice (its live + 5 GiB)
    for _ in range(30):  # armed: a growth snapshot each time the live bytes pass a new high by 10% of the device
        live += 2 * GIB
        watch.observe(0, 20 * GIB, live)
    assert torch.snapshots == (live - high) // (10 * GIB) > 0
    assert (tmp_path / f"{mh.GROWTH_PREFIX}{os.getpid()}{mh.PICKLE}").exists()


def test_steps_that_free_what_they_allocate_never_arm_the_stacks(tmp_path):
    torch = _Torch()
    watch = mh.Watch(str(tmp_path), torch, clock=_Clock())
    for k in range(50 * mh.SLICE_READS):
        watch.observe(0, 40 * GIB, 30 * GIB + (k % 3) * 3 * GIB)
    assert not torch.recorded and not watch.armed


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.5  # a read every half second
        return self.t


def test_a_device_full_of_another_process_s_memory_arms_the_stacks(tmp_path):
    torch = _Torch()
    torch.used = 80 * GIB  # this allocator holds 10 GiB; other processes the rest
    watch = mh.Watch(str(tmp_path), torch, clock=_Clock())
    watch.observe(0, 10 * GIB, 8 * GIB, 100)
    assert not watch.armed  # the allocation rate not known yet
    watch.observe(0, 10 * GIB, 8 * GIB, 200)
    assert watch.armed == "GPU 0 was 80% full"


def test_a_loop_allocating_too_fast_to_record_within_the_budget_is_not_armed_or_is_disarmed(tmp_path):
    torch = _Torch()
    torch.used = 90 * GIB
    per_read = 0.5 * mh.COST_SHARE / mh.ALLOC_COST_S  # allocations in half a second at the budget's rate
    watch = mh.Watch(str(tmp_path), torch, clock=_Clock())
    served = 0.0
    for _ in range(5):
        served += 2 * per_read  # twice the rate the budget affords
        watch.observe(0, 90 * GIB, 80 * GIB, served)
    assert not watch.armed and not torch.recorded
    served += per_read * 0.5  # slower: armed
    watch.observe(0, 90 * GIB, 80 * GIB, served)
    assert watch.armed
    for _ in range(mh.SLICE_READS):  # faster again for a whole slice: disarmed, and not armed again
        served += 3 * per_read
        watch.observe(0, 90 * GIB, 80 * GIB, served)
    assert not watch.armed and torch.recorded[-1] == {"enabled": None} and watch.mode == "too many allocations"
    served += 1
    watch.observe(0, 90 * GIB, 80 * GIB, served)
    assert not watch.armed


def test_an_observer_that_fails_never_replaces_the_workload_s_error(tmp_path):
    class Broken(_Torch):
        def _snapshot(self) -> dict:
            raise RuntimeError("no snapshot here")

    watch = mh.Watch(str(tmp_path / "gone"), Broken())  # a folder that is not there, a snapshot that fails
    watch.on_oom(0, GIB, 80 * GIB, 0)  # returns: no exception of its own


def test_a_monitor_block_that_ends_leaves_the_recording_as_it_found_it(tmp_path):
    torch = _Torch()
    torch.used = 90 * GIB
    watch = mh.Watch(str(tmp_path), torch, clock=_Clock())
    watch.observe(0, 90 * GIB, 80 * GIB)
    watch.observe(0, 90 * GIB, 80 * GIB)
    assert torch.recorded[-1]["enabled"] == "all"
    watch.disarm()
    assert torch.recorded[-1] == {"enabled": None}
    watch.on_oom(0, GIB, 80 * GIB, 0)
    assert not list(tmp_path.iterdir())  # closed: nothing written any more


def _marker(folder: Path, pid: int = 77) -> str:
    name = f"{mh.OOM_PREFIX}{pid}{mh.MARK}"
    (folder / f"{mh.OOM_PREFIX}{pid}{mh.PICKLE}").write_bytes(b"\x80\x04]\x94.")
    (folder / name).write_text(json.dumps({"pid": pid, "t_s": 5.0, "device": 0, "requested_bytes": GIB}))
    return name


def test_each_marker_is_reported_once_and_again_when_rewritten(tmp_path):
    marks = OomMarks(tmp_path)
    name = _marker(tmp_path)
    assert marks.fresh(os.listdir(tmp_path)) == [name]
    assert marks.fresh(os.listdir(tmp_path)) == []
    time.sleep(0.01)
    (tmp_path / name).write_text(json.dumps({"pid": 77, "t_s": 9.0, "device": 0, "requested_bytes": 2 * GIB}))
    os.utime(tmp_path / name, ns=(time.time_ns(), time.time_ns() + 10**6))
    assert marks.fresh(os.listdir(tmp_path)) == [name]


def test_the_sampler_reads_the_gpu_s_processes_as_soon_as_it_sees_a_marker(tmp_path, make_host):
    """The neighbours' cadence is an hour: only the marker makes the sampler read them again, at once."""
    holders = [{"pid": os.getpid(), "usedGpuMemory": 3 * GIB}]

    class Shared(StreamNvml):
        def call(self, fn, index=None, *args):  # type: ignore[no-untyped-def]
            if fn == "nvmlDeviceGetComputeRunningProcesses":
                return list(holders)
            if fn == "nvmlDeviceGetProcessUtilization":
                return []
            return super().call(fn, index, *args)

    got = []
    sampler = Sampler(
        Shared(SCENARIOS["healthy_bf16"]["samples"]),
        make_host(),
        [0],
        cadences=Cadences(gpu_s=0.02, neighbours_s=3600.0),
        pid=os.getpid(),
        sinks=(got.append,),
    )
    sampler.progress = ProgressReader(tmp_path)
    sampler.start()
    try:
        deadline = time.monotonic() + 20
        while len(got) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        holders.append({"pid": 4242, "usedGpuMemory": 40 * GIB})  # another job, after the first reading
        name = _marker(tmp_path)
        processes = tmp_path / name.replace(mh.MARK, mh.PROCESSES)
        while not processes.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        sampler.stop()
    dump = dump_of(tmp_path / name)
    assert dump is not None and dump.processes is not None
    assert {(p.pid, p.used_bytes, p.own) for p in dump.processes} >= {(4242, 40 * GIB, False)}


def test_the_dumps_are_kept_when_the_run_s_folder_goes(tmp_path):
    folder, dest = tmp_path / "progress", tmp_path / "kept"
    folder.mkdir()
    name = _marker(folder)
    OomMarks(folder).record_processes(name, 6.0, [GpuProcess(gpu=0, pid=9, used_bytes=GIB)], [])
    (kept,) = keep(folder, dest)
    assert Path(kept.snapshot).parent == dest and Path(kept.snapshot).exists()
    assert not list(folder.iterdir())
    assert kept.processes is not None and kept.processes[0].pid == 9
    assert keep(tmp_path / "empty", dest / "none") == [] and not (dest / "none").exists()


def test_under_run_the_snapshot_at_the_error_is_kept_beside_the_run_store(workload, tmp_path):
    """The whole way on this machine: `run` injects the hooks, the workload's observer saves the snapshot, the files
    outlive the run's progress folder (the sampler finds no GPU here, so no processes are read)."""
    from gputriage import api

    script, _, env, _ = workload
    env = {k: v for k, v in env.items() if k not in (progress.DIR_ENV, "PYTHONPATH")}
    env["PYTHONPATH"] = str(tmp_path / "site") + os.pathsep + os.environ.get("PYTHONPATH", "")
    store = tmp_path / "store" / "runs.sqlite"
    report = api.run([sys.executable, str(script)], store=store, env=env, profile=False)
    assert report.exit_code == 1
    (kept,) = sorted((store.parent / "memory").glob(f"run-*/{mh.OOM_PREFIX}*{mh.PICKLE}"))
    dump = dump_of(kept.with_name(kept.name.replace(mh.PICKLE, mh.MARK)))
    assert dump is not None and dump.requested_bytes == 96 * GIB
    assert dump.stack[1].file == str(script) and dump.stack[1].line == 11
