"""A hang of a distributed job said while it runs (`diagnosis.run.hang`): once per hang, when ranks have waited in a
collective past the threshold and the others did not arrive (or every rank waits); the ranks missing and their
stacks; on stderr and in the sample the store keeps (`runner.run_session.hang_sink`); and in the run's findings
(`run.rank_hang`), from the recorded hang of a 2-rank gloo job."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputriage.api._common import GputriageError, UsageError, configured_hang_after_s
from gputriage.diagnosis.run.hang import HANG_AFTER, HangWatch, said
from gputriage.inworkload.stack_categories import COLLECTIVE_WAIT, HOST_COMPUTE, INPUT_WAIT
from gputriage.model.finding import Severity
from gputriage.model.sample import RankNow, RankSample, Sample
from gputriage.runner.run_session import hang_sink
from gputriage.testing.recordings import judged, load_runs

SLEEPS = ["/u/train.py:88 load_batch", "/u/train.py:120 main"]


def rank(n: int, category: str, since_s: float, stack: list[str] | None = None, world: int = 3) -> RankSample:
    now = RankNow(category=category, since_s=since_s, stack=stack or [])
    return RankSample(rank=n, pid=100 + n, world_size=world, job_id="j", now=now)


def job(t_s: float, waited_from: float = 0.0) -> list[RankSample]:
    """Ranks 0 and 2 in a collective since `waited_from`; rank 1 sleeping in its loader."""
    return [
        rank(0, COLLECTIVE_WAIT, waited_from),
        rank(1, INPUT_WAIT, waited_from - 1, SLEEPS),
        rank(2, COLLECTIVE_WAIT, waited_from + 1),
    ]


def test_a_hang_is_said_once_after_the_threshold_with_the_ranks_that_did_not_arrive():
    w = HangWatch(after_s=60.0, node="n1")
    assert w.update(50.0, job(50.0)) is None  # not long enough
    e = w.update(61.5, job(61.5))
    assert e is not None and (e.waiting, e.missing, e.doing) == ([0, 2], [1], {"1": INPUT_WAIT})
    assert e.stacks == {"1": SLEEPS} and e.waited_s == 60.5 and e.after_s == 60.0 and e.job_id == "j"
    assert w.update(62.5, job(62.5)) is None and w.update(500.0, job(500.0)) is None  # said once
    assert w.update(501.0, [rank(0, HOST_COMPUTE, 501.0), rank(1, HOST_COMPUTE, 501.0)]) is None  # it cleared
    assert w.update(700.0, job(700.0, waited_from=600.0)) is not None  # a new hang: said again
    assert HangWatch().after_s == HANG_AFTER.value


def test_a_rank_that_just_arrived_holds_the_hang_back_and_every_rank_waiting_is_one():
    w = HangWatch(after_s=60.0)
    arrived = [rank(0, COLLECTIVE_WAIT, 0.0), rank(1, COLLECTIVE_WAIT, 99.0), rank(2, COLLECTIVE_WAIT, 0.0)]
    assert w.update(100.0, arrived) is None
    stuck = [rank(k, COLLECTIVE_WAIT, 0.0, [f"/u/train.py:{k} step"]) for k in range(3)]
    e = w.update(100.0, stuck)
    assert e is not None and e.missing == [] and e.waiting == [0, 1, 2] and list(e.stacks) == ["0"]
    assert "every rank (ranks 0, 1, 2) waited 100 s in one collective" in said(e)
    elsewhere = HangWatch(after_s=60.0).update(100.0, [rank(k, COLLECTIVE_WAIT, 0.0, world=8) for k in range(2)])
    assert elsewhere is not None and "the ranks it waits for run on other nodes" in said(elsewhere)


def test_the_hang_is_said_on_stderr_and_carried_by_the_sample_the_store_keeps():
    lines: list[str] = []
    sink = hang_sink(HangWatch(after_s=60.0, node="n1"), lines.append)
    early, late = Sample(t_s=30.0, ranks=job(30.0)), Sample(t_s=61.0, ranks=job(61.0))
    sink(early)
    sink(late)
    sink(Sample(t_s=62.0, ranks=job(62.0)))
    assert early.hang is None and late.hang is not None and len(lines) == 1
    first, where = lines[0].splitlines()
    assert first == "hang on n1: ranks 0, 2 waited 60 s in a collective for rank 1, which did not arrive"
    assert where == "  rank 1 (input_wait): /u/train.py:88 load_batch <- /u/train.py:120 main"


def test_the_recorded_hang_is_a_critical_finding_naming_the_rank_and_its_line():
    runs = load_runs(Path(__file__).parent / "fixtures" / "ranks" / "runs_gloo.json.gz")
    report = judged(runs["hang"])
    assert report.ranks is not None and [h.missing for h in report.ranks.hangs] == [[1]]
    (f,) = [f for f in report.findings if f.id == "run.rank_hang"]
    assert f.severity == Severity.critical and f.subject == "rank.1"
    assert "rank 1 did not arrive, rank 0 waited" in f.symptom and "_ddp.py:138 main" in f.symptom
    assert f.evidence["stacks"]["1"][0].endswith("_ddp.py:138 main")


def test_the_threshold_comes_from_the_option_else_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = tmp_path / "config.toml"
    monkeypatch.setenv("GPUTRIAGE_CONFIG", str(config))
    assert configured_hang_after_s() is None  # no file: the threshold's own
    config.write_text("[hang]\nafter_seconds = 600\n")
    assert configured_hang_after_s() == 600.0 and configured_hang_after_s(30) == 30.0
    config.write_text("[hang]\nafter_seconds = -1\n")
    with pytest.raises(GputriageError, match=r"\[hang\] after_seconds must be a number > 0"):
        configured_hang_after_s()
    with pytest.raises(UsageError):
        configured_hang_after_s(0)
