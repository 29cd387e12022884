"""A GPU shared for ten minutes on an H200, seen by `watch`: a process holding 20 GiB and running no kernel beside
the jobs that came and went (a regime_shift run, a healthy loop). A watch has no workload: every window counts (no
start-up or shut-down cut), the processes are named by what they are, the holder is named with its GPU-hours and
the changes of regime with their times."""

from __future__ import annotations

import io

import msgspec
from rich.console import Console

from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.owner import ProcessOwner
from gputriage.report.run_terminal import render
from recordings import judged, runs

LIVE = runs("runs_shared_gpu_live.json.gz")


def test_a_watch_counts_every_window_and_names_the_idle_gpu_it_saw():
    report = judged(LIVE["watch_beside_idle_holder"])
    v = report.verdict.per_gpu["0"]
    assert report.kind == "watch"
    assert v.startup_s == 0.0 and v.shutdown_s == 0.0
    assert not {r.regime for r in v.timeline} & {"start-up", "shut-down", "warm-up"}
    # the last 190 s: the jobs had ended, the holder kept its 20 GiB: the GPU idled, it did not "shut down"
    assert v.timeline[-1].regime == B.idle.value and v.timeline[-1].end_s - v.timeline[-1].start_s > 180


def test_the_watch_names_the_holder_with_its_gpu_hours_and_the_regime_changes_with_their_times():
    report = judged(LIVE["watch_beside_idle_holder"])
    held = [f for f in report.findings if f.id == "run.idle_held"]
    assert len(held) == 1
    (holder,) = held[0].evidence["holders"]
    assert holder["pid"] == 1392 and holder["idle_s"] >= 600 and holder["used_min_bytes"] >= 20 * 2**30
    assert 0 < held[0].evidence["gpu_hours"] < 629 / 3600
    changes = [(f.evidence["from"], f.evidence["to"]) for f in report.findings if f.id == "run.regime_changed"]
    assert ("compute_bound", "input_starved") in changes and ("input_starved", "compute_bound") in changes
    assert all(f.symptom.split(" went ")[0].endswith("GPU 0") for f in report.findings if f.id == "run.regime_changed")


def test_a_watch_lists_processes_by_name_and_user_not_as_its_job():
    report = judged(LIVE["watch_beside_idle_holder"])
    out = io.StringIO()
    render(report, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "pid 1392 (a process, kernels 0% of the time, 20.6 GiB)" in text and "this job" not in text
    # live, the owner was looked up: its name and user say whose it is
    owned = msgspec.structs.replace(report.processes[0], owner=ProcessOwner(pid=1392, name="python3", user="root"))
    assert owned.whose("watch") == "python3, root" and owned.whose("run") == "this job"


def test_a_run_beside_the_holder_keeps_its_own_verdict_and_calls_the_holder_another_job():
    report = judged(LIVE["healthy_beside_idle_holder_live"])
    assert report.verdict.bottleneck == B.compute_bound
    out = io.StringIO()
    render(report, Console(file=out, width=200, color_system=None))
    assert "another job" in out.getvalue()
