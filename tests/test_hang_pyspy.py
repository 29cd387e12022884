"""A hang of a distributed job said by what gputriage did not start (`watch`, the exporter), from py-spy's dumps of
the ranks (tests/fixtures/ranks/pyspy_hang.json: a 2-rank gloo job whose rank 1 sleeps before an all-reduce, dumped
twice 5 s apart): each rank's main thread classified as the stack sampler classifies it, the hang said once with the
missing rank's stack, carried by the next sample into the watch's store, served by the exporter."""

from __future__ import annotations

import json
import linecache
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputriage.api.live_hangs import LiveHangs
from gputriage.exporter import Exporter
from gputriage.exporter.exposition import text
from gputriage.inworkload.stack_categories import COLLECTIVE_WAIT, INPUT_WAIT
from gputriage.model.sample import GpuProcess, Sample
from gputriage.report.prometheus import families
from gputriage.sampling.pyspy import PySpySampler
from gputriage.sampling.pyspy_ranks import PySpyRanks

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "ranks" / "pyspy_hang.json").read_text())
ENVIRON = {int(pid): env for pid, env in RECORDED["environ"].items()}
PIDS = sorted(ENVIRON)


@pytest.fixture(autouse=True)
def recorded_sources() -> Iterator[None]:
    """The workload's lines the dumps name, as they read when recorded (`sources`): a line's category comes from its
    text (`time.sleep(` is C, no frame), and the files were in a folder of that machine."""
    kept = {}
    for path, lines in RECORDED["sources"].items():
        text = [""] * max(map(int, lines))
        for n, line in lines.items():
            text[int(n) - 1] = line + "\n"
        kept[path] = linecache.cache.get(path)
        linecache.cache[path] = (sum(map(len, text)), None, text, path)
    yield
    for path, entry in kept.items():
        if entry is None:
            linecache.cache.pop(path, None)
        else:
            linecache.cache[path] = entry


def fed(hangs: LiveHangs | PySpyRanks, rounds: list[dict[str, Any]] = RECORDED["rounds"]) -> None:
    for r in rounds:
        for pid, threads in r["dumps"].items():
            (hangs.on_dump if isinstance(hangs, LiveHangs) else hangs.add)(int(pid), r["t_s"], threads)


def test_each_ranks_main_thread_from_the_dumps_where_it_is_and_since_when():
    ranks = PySpyRanks(environ=ENVIRON.get)
    fed(ranks)
    r0, r1 = ranks.ranks()
    assert (r0.rank, r1.rank, r0.world_size) == (0, 1, 2) and r0.job_id == ENVIRON[PIDS[0]]["TORCHELASTIC_RUN_ID"]
    assert r0.now is not None and r1.now is not None
    assert (r0.now.category, r1.now.category) == (COLLECTIVE_WAIT, INPUT_WAIT)
    assert r0.now.since_s == RECORDED["rounds"][0]["t_s"]  # the same place in both dumps: since the first
    assert r0.now.stack[0].endswith("distributed_c10d.py:3252 all_reduce") and r1.now.stack[0].endswith(
        "_ddp.py:138 main"
    )
    ranks.forget({PIDS[0]})
    assert [r.rank for r in ranks.ranks()] == [0]
    assert PySpyRanks(environ=lambda pid: {"PATH": "/bin"}).identity(1) is None  # not a rank: never dumped for it


def test_the_hang_is_said_once_and_the_next_sample_takes_it_to_the_store():
    said: list[str] = []
    hangs = LiveHangs(after_s=4.0, node="n1", say=said.append)
    hangs.ranks.environ = ENVIRON.get
    fed(hangs)
    fed(hangs, RECORDED["rounds"][1:])  # the same dumps again: said once
    (event,) = hangs.kept
    assert (event.missing, event.waiting, event.source) == ([1], [0], "py-spy") and len(said) == 1
    assert "rank 0 waited 5 s in a collective for rank 1, which did not arrive" in said[0] and "_ddp.py:138" in said[0]
    first, second = Sample(t_s=1.0), Sample(t_s=2.0)
    hangs.sink(first)
    hangs.sink(second)
    assert first.hang == event and second.hang is None


def test_a_watchs_py_spy_rounds_feed_the_hang_watch():
    seen: list[tuple[int, int]] = []
    dumps = {int(pid): threads for pid, threads in RECORDED["rounds"][0]["dumps"].items()}
    sampler = PySpySampler(lambda: PIDS, dump=dumps.__getitem__, on_dump=lambda pid, t, th: seen.append((pid, len(th))))
    sampler.sample_once()
    assert [pid for pid, _ in seen] == PIDS and all(n >= 1 for _, n in seen)


class _Live:
    """The exporter's last second, as far as the hang thread reads it: the processes on the GPUs."""

    def __init__(self) -> None:
        self.processes = [GpuProcess(gpu=i, pid=pid) for i, pid in enumerate(PIDS)]


def test_the_exporter_dumps_the_ranks_on_its_gpus_and_serves_the_hang():
    said: list[str] = []

    def hangs() -> LiveHangs:
        h = LiveHangs(after_s=1e-6, node="n1", say=said.append)
        h.ranks.environ = ENVIRON.get
        return h

    ex = Exporter(label=lambda *_: {}, render=families, hangs=hangs)
    ex.live = _Live()  # type: ignore[assignment]
    ex._pyspy_checked, ex.pyspy = True, None
    dumps = {int(pid): threads for pid, threads in RECORDED["rounds"][0]["dumps"].items()}
    ex.dump_one = dumps.__getitem__
    ex.hang_once()
    ex.hang_once()  # the second round: the others have waited since the first
    assert len(said) == 1 and json.loads(ex.hangs_json())[0]["missing"] == [1]
    state = ex.state()
    scrape = text(families(state)).decode()
    job, host = ENVIRON[PIDS[0]]["TORCHELASTIC_RUN_ID"], state.hostname
    assert f'gputriage_rank_hangs_total{{job="{job}",Hostname="{host}"}} 1' in scrape
    assert f'gputriage_rank_hang_missing{{job="{job}",rank="1",Hostname="{host}"}} 1' in scrape
