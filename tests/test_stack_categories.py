"""One vocabulary for where a Python thread spends its time (`inworkload.stack_categories`): the sampler counts in
it, the windows hold a field per category, the verdicts and the reports say what each is doing in its words; the
sampler loads it by its path inside the workload, where no gputriage may be importable."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from gputriage.inworkload import stack_sampler
from gputriage.inworkload.stack_categories import ALL, CATEGORIES, DOING, SHARE_FIELDS, doing
from gputriage.model.window import HOST_FIELDS, WindowMetrics
from gputriage.report.stack_lines import main_thread
from recordings import judged, runs

INWORKLOAD = Path(stack_sampler.__file__).parent
LOAD_BY_PATH = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("gputriage_stack_sampler", sys.argv[1])
m = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = m
spec.loader.exec_module(m)
c = m.Counts()
print(json.dumps({"categories": list(m.CATEGORIES), "slots": len(c.main), "gc": m.GC_LINE[2],
                  "launch": m.CATEGORIES[m._LAUNCH], "gputriage": "gputriage" in sys.modules}))
"""


def test_every_category_has_its_window_field_and_the_sampler_counts_in_the_vocabularys_order() -> None:
    for c in ALL:
        assert c.field in WindowMetrics.__struct_fields__ and c.field in HOST_FIELDS, c.name
        assert c.doing and DOING[c.name] == doing(c.name) == c.doing
    assert stack_sampler.CATEGORIES == CATEGORIES
    assert list(SHARE_FIELDS) == list(CATEGORIES)
    assert doing("a_newer_samplers") == "a_newer_samplers"  # a category this version does not know: its name


def _load_by_path(sampler: Path) -> dict[str, object]:
    """The sampler as the workload loads it (`trace.inject`): by its path, in an interpreter without site-packages
    (no gputriage importable)."""
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", LOAD_BY_PATH, str(sampler)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_the_sampler_loaded_by_its_path_in_the_workload_reads_the_vocabulary_beside_it() -> None:
    got = _load_by_path(INWORKLOAD / "stack_sampler.py")
    assert got == {"categories": list(CATEGORIES), "slots": len(CATEGORIES), "gc": "gc", "launch": "launch"} | {
        "gputriage": False
    }


def test_a_new_category_is_one_line_of_the_vocabulary(tmp_path: Path) -> None:
    """A copy of the in-workload code with one line added to `ALL`: the sampler counts it, the existing categories
    keep their places."""
    copy = tmp_path / "inworkload"
    shutil.copytree(INWORKLOAD, copy, ignore=shutil.ignore_patterns("__pycache__"))
    vocabulary = copy / "stack_categories.py"
    text = vocabulary.read_text()
    last = [line for line in text.splitlines() if line.strip().startswith("Category(")][-1]
    new = '    Category("collective_wait", "host_collective_wait_share", "waits in a collective", waits=True),'
    vocabulary.write_text(text.replace(last, last + "\n" + new))
    got = _load_by_path(copy / "stack_sampler.py")
    assert got["categories"] == [*CATEGORIES, "collective_wait"] and got["slots"] == len(CATEGORIES) + 1
    assert got["gc"] == "gc" and got["launch"] == "launch"


def test_a_verdict_and_the_report_say_what_the_main_thread_does_in_the_same_words() -> None:
    report = judged(runs("runs_gallery_live.json.gz")["launch_bound"])
    v = report.verdict.per_gpu["0"]
    assert f"the main thread {DOING['launch']} " in v.summary
    assert report.stacks is not None and main_thread(report.stacks).startswith(f"{DOING['launch']} ")


def test_every_category_the_main_thread_can_be_in_names_a_host_side_cause() -> None:
    """The host-side verdict maps the main thread's top category to a cause: a category without one (a rank in a
    collective, as the first two-rank run on a GPU found) would stop the judge."""
    from gputriage.diagnosis.run.host_side import _BY_CATEGORY

    assert set(_BY_CATEGORY) == {c.name for c in ALL}
