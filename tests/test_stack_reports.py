"""Where a Python workload's threads spent its steady state, as `run --json`, the terminal, the HTML report and
`gputriage.monitor()` give it: on CPU, a loop that waits on a slow queue and builds lists names both lines of its
file with their shares, with the profiler left to decide (`--profile auto`) and without it (`--no-profile`).

How many stack samples catch the list building depends on how much CPU the loop gets (on a loaded machine the
sampler, which needs the interpreter lock, sees the waits more often than the work): the lines and their shares are
judged from recorded sampler output (`tests/fixtures/cpu/runs_queue_lists.json.gz`, by
`benchmarks/store_to_fixture.py`); one real run and one real monitored block check that the sampler's output gets
there, with what holds however loaded the machine is."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gputriage.cli.common import to_json
from gputriage.model.run import HostLine, HostStacks, RunReport
from gputriage.report import run_terminal
from gputriage.report.html import render_html
from gputriage.testing.recordings import judged, load_runs

WORKLOAD = Path(__file__).parent / "workloads" / "queue_lists_loop.py"
SOURCE = WORKLOAD.read_text().splitlines()
WAIT = SOURCE.index("        item = q.get()  # waits for the next item") + 1
BUILD = next(i for i, line in enumerate(SOURCE, 1) if line.strip().startswith("rows = [[item"))
SLEEP = next(i for i, line in enumerate(SOURCE, 1) if "time.sleep(PERIOD_S)" in line)
# `gputriage run --store S --json [--no-profile] -- python queue_lists_loop.py --seconds 5` on a free 2-core machine,
# the workload copied to /tmp/job: "auto" with the profiler left to decide, "no_profile" without it
RECORDED = load_runs(Path(__file__).parent / "fixtures" / "cpu" / "runs_queue_lists.json.gz")


def lines_of(stacks: dict[str, Any]) -> dict[tuple[int, str], dict[str, Any]]:
    """The lines of the workload's file (wherever it ran from), by line and category."""
    return {(x["line"], x["category"]): x for x in stacks["lines"] if Path(x["file"]).name == WORKLOAD.name}


@pytest.mark.parametrize("mode", ["auto", "no_profile"])
def test_run_json_names_the_wait_and_the_list_building_with_their_shares(mode):
    rec = RECORDED[mode]
    assert (rec["profile"] or {}).get("mode") == ("auto" if mode == "auto" else None)
    report = json.loads(to_json(judged(rec)))  # what `run --json` prints of it
    stacks = report["stacks"]
    found = lines_of(stacks)
    wait, build, sleep = found[(WAIT, "input_wait")], found[(BUILD, "host_compute")], found[(SLEEP, "input_wait")]
    assert wait["function"] == "main" and wait.get("main", True) and 0.05 <= wait["share"] <= 1.0
    assert build["function"] == "<listcomp>" and 0.005 <= build["share"] < 1.0
    assert sleep["function"] == "producer" and sleep["main"] is False and sleep["share"] > 0.5  # its own thread
    shares = stacks["main_shares"]
    assert shares["input_wait"] > shares["host_compute"] > 0 and shares["gpu_wait"] == shares["launch"] == 0
    assert sum(shares.values()) == pytest.approx(1.0, abs=0.01)


def test_a_real_run_s_stack_samples_reach_its_json(tmp_path):
    """The sampler in a real workload, through `run --json`: the producer's sleep on its own thread (it sleeps
    whatever the load) and the main thread's wait (each item comes 150 ms after the last; the lists take a fraction
    of that even on a loaded core). Whether a sample catches the lists is left to the recorded runs above."""
    r = subprocess.run(
        [sys.executable, "-m", "gputriage", "run", "--json", "--no-store", "--", sys.executable, str(WORKLOAD)]
        + ["--seconds", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    stacks = json.loads(r.stdout)["stacks"]
    found = lines_of(stacks)
    assert found[(WAIT, "input_wait")].get("main", True) and found[(SLEEP, "input_wait")]["main"] is False
    assert {x["category"] for x in found.values()} <= {"input_wait", "host_compute", "gc"}
    shares = stacks["main_shares"]
    assert shares["input_wait"] > 0 and shares["gpu_wait"] == shares["launch"] == 0
    assert sum(shares.values()) == pytest.approx(1.0, abs=0.01)


REPORT = RunReport(
    command=["python", "serve.py"],
    stacks=HostStacks(
        span_s=30.0,
        samples=2900,
        main_shares={"input_wait": 0.72, "host_compute": 0.27, "gc": 0.01},
        main_cpu_pct=27.0,
        others_busy=0.0,
        lines=[
            HostLine(file="/srv/app/serve.py", line=31, function="main", category="input_wait", share=0.72),
            HostLine(
                file="/srv/app/serve.py", line=12, function="producer", category="input_wait", share=0.99, main=False
            ),
        ],
    ),
)
REPORT.meta.cwd = "/srv/app"


def test_the_terminal_and_the_page_show_the_lines():
    console = Console(file=io.StringIO(), width=200)
    run_terminal.render(REPORT, console)
    out = console.file.getvalue()
    assert "python: the main thread waits for input 72%, computes on the host 27%, collects garbage 1%" in out
    assert "72% serve.py:31 main (waits for input)" in out
    assert "99% serve.py:12 producer (waits for input, another thread)" in out
    page = render_html(REPORT)
    assert "Python threads" in page and "serve.py:31 main" in page and "another thread" in page


MONITORED = textwrap.dedent("""
    import json, queue, threading, time, gputriage
    q, asked = queue.Queue(), threading.Event()
    def producer():  # an item 0.1 s after each request: the main thread waits however slow its lists are
        while True:
            asked.wait()  # the producer's wait
            asked.clear()
            time.sleep(0.1)
            q.put(1)
    threading.Thread(target=producer, daemon=True).start()
    with gputriage.monitor(isolated=ISOLATED) as m:
        for _ in range(25):  # 2.5 s of waits, however long the lists take
            asked.set()
            item = q.get()  # the wait
            rows = [[i * 1.0 for i in range(2000)] for _ in range(300)]  # the lists
    print(json.dumps([[x.line, x.category, x.main] for x in m.report.stacks.lines]))
""")


@pytest.mark.parametrize("isolated", [True, False])
def test_monitor_names_the_lines_of_its_block(tmp_path, isolated):
    """A real monitored block, sampled in a child process (isolated) or on a thread of its own: its wait is named on
    the main thread, the producer's lines on another; the lists, where a sample caught them, as host work (or the
    collections their allocations start). Which lines the judge names from given samples: the recorded runs above."""
    script = tmp_path / "m.py"
    script.write_text(MONITORED.replace("ISOLATED", str(isolated)))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    seen = {(line, cat, main) for line, cat, main in json.loads(r.stdout.strip().splitlines()[-1])}
    source = script.read_text().splitlines()
    wait = next(i for i, s in enumerate(source, 1) if "# the wait" in s)
    build = next(i for i, s in enumerate(source, 1) if "# the lists" in s)
    assert (wait, "input_wait", True) in seen
    assert {(cat, main) for line, cat, main in seen if line == build} <= {("host_compute", True), ("gc", True)}
    sleep = next(i for i, s in enumerate(source, 1) if "time.sleep(0.1)" in s)
    asked = next(i for i, s in enumerate(source, 1) if "# the producer's wait" in s)
    assert {line for line, _, main in seen if not main} <= {sleep, asked, 0}  # the producer's (or a collection)
