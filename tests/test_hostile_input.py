"""Input from anywhere (a snapshot attached to a bug report, a trace, a command kept in the store): a fact of
the wrong type is one line and exit 3, never a crash; no string from a file reaches the terminal with control
characters; a huge field is cut, not printed."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import H200_SNAPSHOT
from gputriage import api
from gputriage.model.fact_types import declared
from gputriage.model.safe_text import NAME_CHARS, has_control, safe_text, safe_tree
from gputriage.model.snapshot import Snapshot

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
GT = [sys.executable, "-m", "gputriage"]
HOSTILE = "red\x1b[31mRED\x1b[0m bell\x07 cr\rover nul\x00 csi\x9b2J rlo\u202eevil\u202c osc\x1b]0;title\x07 del\x7f"
# what must never reach a terminal: C0 controls but the newline, DEL, C1 controls, bidi overrides and isolates
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def gt(*args: str) -> subprocess.CompletedProcess:
    """gputriage piped (not a terminal), 80 columns, output as bytes: a raw byte that is not UTF-8 fails the
    decoding in `clean`."""
    return subprocess.run(GT + list(args), capture_output=True, timeout=120, env=dict(os.environ, COLUMNS="80"))


def clean(output: bytes) -> str:
    """The output as text, asserted free of every character that could drive a terminal."""
    text = output.decode("utf-8")  # strict: a lone 0x9b byte (a C1 CSI) is not UTF-8
    found = FORBIDDEN.search(text)
    assert found is None, (
        f"{found.group()!r} at {found.start()}: {text[max(0, found.start() - 60) : found.end() + 20]!r}"
    )
    return text


def snapshot_with(tmp_path: Path, changes: dict[str, Any], **top: Any) -> Path:
    data = json.loads(H200_SNAPSHOT.read_text())
    for f in data["facts"]:
        if f["name"] in changes:
            f.pop("unavailable", None)
            f["value"] = changes.pop(f["name"])
    data["facts"] += [{"name": k, "source": "test", "value": v} for k, v in changes.items()]
    data.update(top)
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data))
    return path


# --- the sanitizing function ------------------------------------------------------------------
@pytest.mark.parametrize(
    "char",
    ["\x1b", "\x07", "\x00", "\x9b", "\x85", "\u202e", "\u2066", "\u200f", "\u2028", "\udc9b", "\x7f", "\x08", "\r"],
)
def test_safe_text_leaves_no_control_character(char):
    out = safe_text(f"a{char}b")
    assert not has_control(out) and out.startswith("a") and out.endswith("b") and len(out) == 3


def test_safe_text_cuts_and_says_so():
    assert safe_text("x" * 10, 5) == "xxxx…"
    assert safe_text("x" * 5, 5) == "xxxxx"
    assert safe_text("one\ntwo\r\nthree", newline="⏎") == "one⏎two⏎three"
    assert safe_text("one\ntwo", newline="\n") == "one\ntwo"
    assert safe_text("tab\there") == "tab here"
    assert safe_tree({"k\x1b": ["v\x07", 3, None, {"x": "\x9b"}]}) == {"k\ufffd": ["v\ufffd", 3, None, {"x": "\ufffd"}]}


# --- item: a fact of the wrong type -----------------------------------------------------------------
@pytest.mark.parametrize(
    "name, value",
    [
        ("gpu.0.temperature_c", "hot"),
        ("gpu.0.temperature_c", True),
        ("gpu.0.memory.used_bytes", -1),
        ("gpu.0.memory.used_bytes", 10**30),
        ("gpu.count", 10**12),  # a loop over that many GPUs would never end
        ("gpu.0.power.draw_mw", [1, 2]),
        ("gpu.0.processes", [{"used_bytes": 5}]),  # no pid
        ("kernel.xid_events", [{"code": 79, "pci": "0000:18:00.0", "meaning": "x", "blame": "aliens", "text": ""}]),
        ("kernel.xid_events", {"code": 79}),
        ("host.net.interfaces", {"eth0": {"rx_errors": "many"}}),
        ("host.cpu.per_core_busy_pct", ["busy"]),
        ("torch.cuda.arch_list", "sm_90"),
        ("driver.nvml", "yes"),
        ("env.costly", {"CUDA_LAUNCH_BLOCKING": 1}),
    ],
)
def test_a_fact_of_the_wrong_type_is_one_line_exit_3(tmp_path, name, value):
    path = snapshot_with(tmp_path, {name: value})
    for args in (
        ("check", "--from", str(path)),
        ("checklist", "box", "--from", str(path)),
        ("report", str(path), "-o", str(tmp_path / "r.html")),
    ):
        r = gt(*args)
        assert r.returncode == 3, (args, r.stderr)
        err = clean(r.stderr)
        assert err.count("\n") == 1 and f"fact {name}" in err and "internal error" not in err
    with pytest.raises(api.GputriageError, match=re.escape(name)):
        api.check(path)


@pytest.mark.parametrize("taken_at", [-1e20, 1e300, -1, "noon", None])
def test_a_time_out_of_range_is_one_line_exit_3(tmp_path, taken_at):
    path = snapshot_with(tmp_path, {}, taken_at=taken_at)
    r = gt("check", "--from", str(path))
    assert r.returncode == 3 and "taken_at" in clean(r.stderr) and clean(r.stderr).count("\n") == 1
    with pytest.raises(api.GputriageError):
        api.check(path)


def test_values_of_the_right_type_are_kept_as_the_rules_read_them(tmp_path):
    path = snapshot_with(
        tmp_path,
        {
            "gpu.0.temperature_c": 87,
            "gpu.0.gpm.sm_active_pct": 50,
            "kernel.xid_events": [
                {
                    "code": 79,
                    "pci": "0000:18:00.0",
                    "meaning": "off the bus",
                    "blame": "platform",
                    "text": "GPU has fallen off the bus",
                }
            ],
            "a.fact.from.a.newer.gputriage": {"any": ["shape\x1b"]},
        },
    )
    snap = Snapshot.load(path)
    assert snap.get("gpu.0.temperature_c") == 87
    assert snap.get("gpu.0.gpm.sm_active_pct") == 50.0 and isinstance(snap.get("gpu.0.gpm.sm_active_pct"), float)
    assert snap.get("kernel.xid_events")[0]["code"] == 79  # a plain dict, as the rules index it
    assert snap.get("a.fact.from.a.newer.gputriage") == {"any": ["shape\ufffd"]}
    assert "xid.event" in {f.id for f in api.check(path).findings}


def test_every_fact_gputriage_collects_has_a_declared_type(collect, h200):
    """A new fact gets its type in model/fact_types.py, so that a file can be checked against it."""
    names = {f.name for f in collect(h200).facts}
    for fixture in H200_SNAPSHOT.parent.glob("snapshot_*.json"):
        names |= {f.name for f in Snapshot.load(fixture).facts}
    names |= {"host.fs.cwd.seq_read_mbps", "host.fs.cwd.rand_read_4k_iops", "host.fs.cwd.read_probe"}  # check --full
    assert len(names) > 80
    assert [n for n in sorted(names) if declared(n) is None] == []


# --- item: escape codes and huge strings ----------------------------------------------------------
def hostile_snapshot(tmp_path: Path) -> Path:
    return snapshot_with(
        tmp_path,
        {
            "gpu.0.name": f"H200 {HOSTILE}",
            "driver.version": HOSTILE,
            "host.fs.cwd.path": HOSTILE,
            "kernel.xid_events": [
                {"code": 79, "pci": HOSTILE, "meaning": HOSTILE, "blame": "platform", "text": HOSTILE}
            ],
            "env.costly": {"CUDA_LAUNCH_BLOCKING": HOSTILE},
            f"gpu.0.{HOSTILE}": HOSTILE,
        },
        hostname=HOSTILE,
    )


def test_escape_codes_in_a_snapshot_never_reach_the_terminal(tmp_path):
    path = hostile_snapshot(tmp_path)
    for args in (
        ("check", "--from", str(path), "-v"),
        ("check", "--from", str(path), "--markdown"),
        ("check", "--from", str(path), "--json"),
        ("checklist", "box", "--from", str(path)),
    ):
        r = gt(*args)
        assert r.returncode in (0, 1), (args, r.stderr)
        out = clean(r.stdout)
        assert "RED" in out or "red" in out  # the text is shown, only its control characters replaced
        clean(r.stderr)
    report = json.loads(gt("check", "--from", str(path), "--json").stdout)
    assert report["hostname"].startswith("red\ufffd[31mRED")  # the JSON holds the text, made safe
    page = tmp_path / "r.html"
    r = gt("report", str(path), "-o", str(page))
    assert r.returncode == 0 and clean(r.stderr)
    clean(page.read_bytes())


def test_a_60_mb_hostname_is_cut_everywhere(tmp_path):
    data = json.loads(H200_SNAPSHOT.read_text())
    data["hostname"] = "h" * 60_000_000
    for f in data["facts"]:
        if f["name"] == "gpu.0.name":
            f["value"] = "G" * 5_000_000
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    snap = Snapshot.load(path)
    assert len(snap.hostname) == NAME_CHARS and snap.hostname.endswith("…")
    for args in (
        ("check", "--from", str(path)),
        ("check", "--from", str(path), "--json"),
        ("check", "--from", str(path), "--markdown"),
    ):
        r = gt(*args)
        assert r.returncode == 0 and len(r.stdout) < 40_000, (args, len(r.stdout))
    page = tmp_path / "big.html"
    assert gt("report", str(path), "-o", str(page)).returncode == 0
    assert page.stat().st_size < 400_000  # the page's scripts and styles are ~100 kB
    # a --json report file read back by `report` is cut the same way
    report_file = tmp_path / "check.json"
    report_file.write_text(
        json.dumps(
            dict(json.loads(gt("check", "--from", str(H200_SNAPSHOT), "--json").stdout), hostname="h" * 10_000_000)
        )
    )
    assert gt("report", str(report_file), "-o", str(page)).returncode == 0
    assert page.stat().st_size < 400_000


def test_a_trace_with_a_hostile_kernel_name(tmp_path):
    data = json.loads(gzip.decompress((TRACES / "healthy.json.gz").read_bytes()))
    data["deviceProperties"][0]["name"] = HOSTILE
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    for e in kernels:
        e["name"] = f"void evil_kernel<{HOSTILE}>(" + "float, " * 2000 + "int)"
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))
    r = gt("trace", str(path))
    assert r.returncode in (0, 1), r.stderr
    out = clean(r.stdout)
    assert "evil_kernel" in out
    page = tmp_path / "t.html"
    assert gt("report", str(path), "-o", str(page)).returncode == 0
    clean(page.read_bytes())


def test_a_stored_command_with_escape_codes(tmp_path):
    from gputriage.model.run import RunMeta, RunReport
    from gputriage.sampling.store import Store

    store = tmp_path / "s.sqlite"
    db = Store(store)
    command = ["python", "-c", f"print(1)\nprint('{HOSTILE}')"]
    run_id = db.begin_run("run", command, RunMeta())
    db.end_run(RunReport(id=run_id, command=command, exit_code=0))
    db.close()
    runs = clean(gt("runs", "--store", str(store)).stdout)
    assert len(runs.splitlines()) == 2  # the header and one line for the run, however many lines its command has
    assert "print(1)⏎print(" in runs
    shown = gt("show", str(run_id), "--store", str(store))
    assert shown.returncode == 0, shown.stderr
    assert "print(1)" in clean(shown.stdout)
    clean(gt("show", str(run_id), "--store", str(store), "--json").stdout)


def test_a_command_whose_arguments_are_not_utf8_is_run_kept_and_shown(tmp_path):
    store = tmp_path / "s.sqlite"
    r = subprocess.run(
        [
            *map(os.fsencode, GT),
            b"run",
            b"--store",
            os.fsencode(store),
            b"--",
            os.fsencode(sys.executable),
            b"-c",
            b"import sys; print(len(sys.argv[1]))",
            b"a\x9b\x1b[2Jb",
        ],
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == b"7"  # the workload got its argument's bytes as given
    assert " cut " not in clean(gt("runs", "--store", str(store)).stdout)  # the run was kept whole
    assert "a\ufffd\ufffd[2Jb" in clean(gt("show", "1", "--store", str(store)).stdout)


def test_an_error_message_quoting_a_file_is_one_clean_line(tmp_path):
    path = tmp_path / f"bad{HOSTILE.replace(chr(0), '')[:40].replace('/', '')}.json"
    path.write_text("{")
    r = gt("check", "--from", str(path))
    assert r.returncode == 3 and clean(r.stderr).count("\n") == 1


def test_a_check_report_file_is_held_to_the_snapshots_types(tmp_path):
    report = json.loads(gt("check", "--from", str(H200_SNAPSHOT), "--json", "--fail-on", "never").stdout)
    page = tmp_path / "r.html"
    for taken_at in (-1e20, 1e300):  # a time no calendar holds is shown as unknown, not a crash
        path = tmp_path / "check.json"
        path.write_text(json.dumps(dict(report, taken_at=taken_at)))
        r = gt("report", str(path), "-o", str(page))
        assert r.returncode == 0, r.stderr
    for name, value in (("gpu.count", 10**9), ("gpu.0.temperature_c", "hot")):  # 10**9 GPUs would never end
        path = tmp_path / "check.json"
        path.write_text(json.dumps(dict(report, facts=dict(report["facts"], **{name: value}))))
        r = gt("report", str(path), "-o", str(page))
        assert r.returncode == 3 and f"fact {name}" in clean(r.stderr)


def test_a_stored_run_with_a_start_no_calendar_holds_is_shown_not_a_crash() -> None:
    import io

    from rich.console import Console

    from gputriage.model.run import RunReport
    from gputriage.report.run_terminal import render

    console = Console(file=io.StringIO(), width=80)
    render(RunReport(command=["python", "train.py"], started_s=-1e20, ended_s=5.0), console)
    assert console.file.getvalue().splitlines()[1].startswith("?")  # type: ignore[attr-defined]
