"""The window labels are one ordered list of rules (`diagnosis.run.labels.LABEL_RULES`), each with its thresholds:
the first rule that applies names a window; docs/verdicts.md's numbered list is made from the list; the catalog's
`run.<bottleneck>` entries take each label's thresholds from the rules that name it."""

from __future__ import annotations

import dataclasses
import re
import string
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from gputriage.diagnosis import catalog
from gputriage.diagnosis.run.classify import label
from gputriage.diagnosis.run.host_rules import HOST_RULES
from gputriage.diagnosis.run.label_rule import LabelRule, first
from gputriage.diagnosis.run.labels import LABEL_NEEDS, LABEL_RULES, LABEL_THRESHOLDS, VERDICT_SPECS, markdown
from gputriage.diagnosis.run.window_figures import figures_of
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold, hand_written
from gputriage.model.run import GpuStatic
from gputriage.model.window import WindowMetrics

DOC = Path(__file__).resolve().parents[1] / "docs" / "verdicts.md"
START, END = "<!-- label rules:", "<!-- end of the label rules -->"
ALL_RULES = [*LABEL_RULES, *HOST_RULES]


def documented() -> str:
    text = DOC.read_text()
    start = text.index(START)
    return text[text.index("\n", start) + 1 : text.index(END)].strip()


def test_the_docs_numbered_list_is_the_rules_in_their_order() -> None:
    assert documented() == markdown().strip(), (
        "docs/verdicts.md's label rules differ from LABEL_RULES: paste `python -m gputriage.diagnosis.run.labels "
        "--markdown` between its label-rules markers"
    )
    labels = re.findall(r"^\d+\. \*\*([^*]+)\*\*", documented(), re.M)
    assert labels == [r.label.value if r.label is not None else r.title for r in LABEL_RULES]


def test_the_generator_prints_the_list() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gputriage.diagnosis.run.labels", "--markdown"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == markdown()


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: (r.label.value if r.label else r.title)[:40])
def test_each_rule_names_its_thresholds_and_writes_none_of_their_numbers(rule: LabelRule) -> None:
    fields = {field for _, field, _, _ in string.Formatter().parse(rule.meaning) if field}
    assert fields == {t.name for t in rule.thresholds}
    assert not hand_written(rule.meaning, rule.thresholds)
    assert "{" not in rule.rendered()


def test_a_changed_threshold_changes_the_rules_words() -> None:
    rule = next(r for r in LABEL_RULES if r.label == B.underfilled)
    t = rule.thresholds[0]
    moved = dataclasses.replace(
        rule, thresholds=(Threshold(t.name, 91.5, t.unit, t.meaning, t.source), *rule.thresholds[1:])
    )
    assert "91.5%" in moved.rendered() and "91.5" not in rule.rendered()


def test_every_label_is_named_by_a_rule_and_its_entry_lists_their_thresholds() -> None:
    entries = catalog.entries()
    for b in B:
        giving = [r for r in LABEL_RULES if b in r.gives()]
        assert giving, b
        spec = VERDICT_SPECS[b]
        assert spec.thresholds == LABEL_THRESHOLDS[b] and spec.needs == LABEL_NEEDS[b]
        assert set(LABEL_THRESHOLDS[b]) >= {t for r in giving if r.label == b for t in r.thresholds}
        assert f"run.{b.value}" in entries
    assert LABEL_NEEDS[B.tensor_cores_idle] == ("gpu", "gpm")  # only a rule that reads GPM names it
    assert LABEL_NEEDS[B.compute_bound] == ("gpu",)  # a rule without GPM names it too
    assert LABEL_NEEDS[B.input_starved] == ("gpu", "workload")


@pytest.mark.parametrize("gpm", [True, False])
def test_the_last_rule_of_each_list_names_every_window_left(gpm: bool) -> None:
    """A window no other rule names (nothing counted but GPU-Util at 80%) is compute_bound, with and without GPM; a
    GPU idle a quarter of the time whose host shows nothing is sync_bound."""
    busy = WindowMetrics(t0_s=0.0, t1_s=1.0, util_pct=80.0, sm_active_pct=70.0 if gpm else None)
    assert label(busy, GpuStatic())[0] == B.compute_bound
    fed_poorly = WindowMetrics(t0_s=0.0, t1_s=1.0, util_pct=50.0, read_mb_per_s=0.0)
    assert first(HOST_RULES, figures_of(fed_poorly, GpuStatic())) == (B.sync_bound, [B.input_starved])


def test_the_first_rule_that_applies_names_the_window() -> None:
    """A throttled window whose SMs are also underfilled is throttled: throttled comes first."""
    w = WindowMetrics(t0_s=0.0, t1_s=1.0, util_pct=100.0, sm_active_pct=20.0, throttled_share=1.0)
    assert label(w, GpuStatic()) == (B.throttled, [])
    assert label(msgspec_replace(w, throttled_share=0.0), GpuStatic())[0] == B.underfilled


def test_a_rule_passed_over_that_may_hold_stays_possible() -> None:
    """Without GPM and without the allocator's report, a full GPU at GPU-Util 95% may wait on the allocator: the
    later rule names the window, vram_pressure stays possible."""
    gpu = GpuStatic(memory_total_bytes=100 * 2**30, power_limit_mw=700_000)
    w = WindowMetrics(t0_s=0.0, t1_s=1.0, util_pct=95.0, used_bytes=99 * 2**30, power_w=600.0)
    b, possible = label(w, gpu)
    assert b == B.compute_bound and possible[-1] == B.vram_pressure
    roomy = msgspec_replace(w, used_bytes=10 * 2**30)
    assert B.vram_pressure not in label(roomy, gpu)[1]


def msgspec_replace(w: WindowMetrics, **changes: float) -> WindowMetrics:
    return msgspec.structs.replace(w, **changes)
