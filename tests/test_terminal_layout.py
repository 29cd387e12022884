"""The terminal output at 80 columns and piped: a run on one line, a finding's tag never alone on a line,
wrapped lines keeping their indent, no trailing spaces, words in the plural only when there are several, and
help that reads naturally."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import msgspec

from conftest import H200_SNAPSHOT
from gputriage import api
from gputriage.diagnosis.catalog import for_command
from gputriage.model.finding import Severity
from gputriage.report import terminal
from gputriage.report.check_terminal import render as render_check
from gputriage.report.style import Tagged, finding_text, plural
from gputriage.report.trace_terminal import render as render_trace

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
GT = [sys.executable, "-m", "gputriage"]


def gt(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    return subprocess.run(
        GT + list(args), capture_output=True, text=True, timeout=120, env=dict(os.environ, COLUMNS=str(columns))
    )


def drawn(draw, width: int = 80) -> str:
    """What a renderer prints through the CLI's console, piped (no colour), at `width` columns."""
    buf = io.StringIO()
    draw(terminal.console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_no_line_ends_in_a_space():
    outputs = {
        "trace": gt("trace", str(TRACES / "input_starved.json.gz")).stdout,
        "check": gt("check", "--from", str(H200_SNAPSHOT.parent / "snapshot_busy.json"), "-v").stdout,
        "checklist": gt("checklist", "box", "--from", str(H200_SNAPSHOT)).stdout,
        "rules": gt("rules").stdout,
        "trace via the console": drawn(lambda c: render_trace(api.analyze_trace([TRACES / "launch_bound.json.gz"]), c)),
    }
    for what, text in outputs.items():
        lines = text.splitlines()
        assert len(lines) > 10, what
        assert [line for line in lines if line.endswith(" ")] == [], what


def test_a_background_colour_at_the_end_of_a_line_is_kept():
    from rich.text import Text

    buf = io.StringIO()
    c = terminal.console(file=buf, width=40, force_terminal=True, color_system="standard")
    c.print(Text("done", style="bold") + Text("   ", style="on red"))
    assert buf.getvalue().count(" ") == 3


def test_a_finding_tag_is_never_alone_on_its_line():
    specs = for_command(None)
    for width in range(50, 111, 3):  # the symptom's column in a finding at 60 to 120 columns
        buf = io.StringIO()
        console = terminal.console(file=buf, width=width, color_system=None)
        for spec in specs:
            for subject in ("", "gpu.0"):
                tag = f"[{spec.id}{' · ' + subject if subject else ''}]"
                lines = console.render_lines(Tagged(spec.symptom, tag), pad=False)
                text = ["".join(segment.text for segment in line).strip() for line in lines]
                assert text[-1].endswith(spec.symptom.split()[-1] + "  " + tag), (width, spec.id)
    finding = specs[0].finding({}, subject="gpu.0", severity=Severity.warn)
    out = drawn(lambda c: c.print(finding_text(finding)))
    assert f"[{finding.id} · gpu.0]" in out and out.splitlines()[0].startswith("     WARN ")


def test_a_tag_that_fits_stays_on_the_symptoms_line():
    out = drawn(lambda c: c.print(Tagged("A short symptom", "[a.finding · gpu.0]")))
    assert out == "A short symptom  [a.finding · gpu.0]\n"


def test_wrapped_lines_keep_their_indent(tmp_path):
    import gzip

    raw = gzip.decompress((TRACES / "healthy.json.gz").read_bytes())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(raw)[:5000])
    lines = gt("trace", str(cut)).stdout.splitlines()
    notes = [i for i, line in enumerate(lines) if line.startswith("  note: ")]
    assert len(notes) >= 2 and notes[1] > notes[0] + 1  # the first note wraps
    for i in notes:  # a note's wrapped lines start under its text, eight columns in
        for line in lines[i + 1 :]:
            if line.startswith("  note: ") or not line.startswith(" "):
                break
            assert line.startswith(" " * 8) and line[8] != " ", line
    check = drawn(lambda c: render_check(api.check(H200_SNAPSHOT.parent / "snapshot_busy.json"), c))
    legend = check[check.index("  GPM window") :].split("\n\n")[0].splitlines()
    assert len(legend) > 2 and all(line.startswith("  ") for line in legend)
    checklist = gt("checklist", "box", "--from", str(H200_SNAPSHOT)).stdout.splitlines()[1:-1]
    for line in checklist:
        assert line[:4] in ("PASS", "FAIL", " ?? ", "ASK ") or line.startswith(" " * 5), line


def test_one_kernel_one_gap():
    assert plural(1, "kernel") == "1 kernel" and plural(2, "kernel") == "2 kernels"
    assert plural(1_024, "gap") == "1,024 gaps" and plural(0, "step") == "0 steps"
    report = api.analyze_trace([TRACES / "input_starved.json.gz"])
    rank = report.ranks[0]
    a = rank.anatomy[0]
    one = msgspec.structs.replace(
        a, kernels=1, gaps=1, host_work=[msgspec.structs.replace(h, gaps=1) for h in a.host_work]
    )
    report = msgspec.structs.replace(report, ranks=[msgspec.structs.replace(rank, anatomy=[one], events=1)])
    out = drawn(lambda c: render_trace(report, c), width=200)
    assert "1 kernel," in out and "1 idle gap," in out and "(1 gap)" in out and "1 event," in out
    assert "1 kernels" not in out and "1 gaps" not in out


def test_runs_shows_a_run_on_one_line(tmp_path):
    from gputriage.model.run import RunMeta, RunReport
    from gputriage.sampling.store import Store

    store = tmp_path / "s.sqlite"
    db = Store(store)
    for command in (
        ["python", "-c", "import torch\nx = torch.ones(3)\nprint(x)"],
        ["sleep", "1"],
        ["bash", "-c", "for i in 1 2 3; do\n  echo $i\ndone\n" + "x" * 200],
    ):
        run_id = db.begin_run("run", command, RunMeta())
        db.end_run(RunReport(id=run_id, command=command, exit_code=0))
    db.close()
    lines = gt("runs", "--store", str(store)).stdout.splitlines()
    assert len(lines) == 4 and all(len(line) <= 80 for line in lines)
    assert "python -c import torch⏎x = torch" in lines[3]
    assert lines[1].endswith("…")


def commands() -> list[tuple[str, ...]]:
    from gputriage.cli.main import app

    found: list[tuple[str, ...]] = []
    for info in app.registered_commands:
        found.append(((info.name or info.callback.__name__).replace("_", "-"),))  # type: ignore[union-attr]
    for group in app.registered_groups:
        found.append((group.name,))  # type: ignore[arg-type]
        for info in group.typer_instance.registered_commands:  # type: ignore[union-attr]
            found.append((group.name, info.name or info.callback.__name__))  # type: ignore[arg-type, union-attr]
    return found


def test_help_reads_naturally():
    from typer.testing import CliRunner

    from gputriage.cli.main import app

    def help_of(*command: str) -> str:
        r = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"}, prog_name="gputriage")
        assert r.exit_code == 0, (command, r.output)
        return r.output

    listed = commands()
    assert ("run",) in listed and ("baseline", "save") in listed and len(listed) > 15
    for command in [(), *listed]:
        text = help_of(*command)
        for python_spelling in ("{", "<list", "<str>", "<int>", "<float>", "<Path>", "[[", "...."):
            assert python_spelling not in text.replace('{"', "").replace("{gpu", "").replace("{id", ""), (
                command,
                python_spelling,
            )
        assert all(len(line) <= 80 for line in text.splitlines()), command
    run = help_of("run")
    assert "Usage: gputriage run [OPTIONS] COMMAND...\n" in run and "--currency CODE" in run
    assert "Usage: gputriage rules [OPTIONS] [ID]\n" in help_of("rules")
    assert "Usage: gputriage baseline save [OPTIONS] NAME RUN...\n" in help_of("baseline", "save")
