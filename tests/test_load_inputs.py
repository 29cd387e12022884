"""`gputriage load` on bad options, bad prompt files and servers that are not what they should be: a one-line
error with the documented exit code (2: the command line, 3: an input), or a report whose requests carry the
error — never exit 4 (an internal error)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gputriage.cli.main import app
from serving import HostileServer, free_port, http_answer

GT = [sys.executable, "-m", "gputriage"]
RUNNER = CliRunner()
QUICK = [
    "--concurrency",
    "2",
    "--requests",
    "3",
    "--warmup",
    "0",
    "--seconds",
    "10",
    "--timeout",
    "3",
    "--no-gpus",
    "--no-store",
]


def load(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(GT + ["load", *args], capture_output=True, text=True, timeout=120)


def in_process(*args: str) -> subprocess.CompletedProcess:
    """The command run here (quicker than a process each): its code, stdout and stderr; an exception that got
    out of it (what would be exit 4) fails the test."""
    r = RUNNER.invoke(app, ["load", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


def one_line(r: subprocess.CompletedProcess) -> str:
    assert r.stderr.startswith("gputriage: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr
    return r.stderr


@pytest.mark.parametrize(
    "args, said",
    [
        (["--rate", "inf"], "--concurrency N"),
        (["--rate", "nan"], "positive number"),
        (["--rate", "-2"], "positive number"),
        (["--rate", "2", "--burstiness", "nan"], "--burstiness"),
        (["--seconds", "nan"], "--seconds"),
        (["--seconds", "inf"], "--seconds"),
        (["--timeout", "0"], "--timeout"),
        (["--long-prompts", "1.5"], "--long-prompts"),
        (["--weights-gb", "nan"], "weights"),
        (["--concurrency", "0"], "concurrency 0"),
        (["--max-concurrency", "100000000"], "concurrency"),
        (["--input-tokens", "100000000"], "at most"),
        (["--slo", "ttft=nanms"], "--slo"),
        (["--slo", "ttft=0ms"], "positive"),
    ],
)
def test_options_that_are_not_numbers_in_range_are_refused_before_anything_runs(args, said):
    pytest.importorskip("aiohttp")
    r = in_process(f"http://127.0.0.1:{free_port()}", "--model", "m", "--no-store", *args)
    assert r.returncode == 2 and said in one_line(r), (args, r.stderr)


@pytest.mark.parametrize(
    "content, said",
    [
        (bytes(range(256)) * 8, "not UTF-8 text"),
        (b"[1, 2]\n", 'not a JSON object with a "prompt"'),
        (b'{"prompt": 5}\n', 'not a JSON object with a "prompt"'),
        (b'{"prompt": "hi", "max_tokens": 1e999}\n', '"max_tokens" is a positive integer'),
        (b'{"prompt": "hi", "max_tokens": true}\n', '"max_tokens" is a positive integer'),
        (b"\n\n", "no prompts"),
    ],
)
def test_a_prompts_file_that_is_not_one_is_an_input_error(tmp_path, content, said):
    pytest.importorskip("aiohttp")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_bytes(content)
    r = in_process(f"http://127.0.0.1:{free_port()}", "--model", "m", "--prompts", str(prompts), *QUICK)
    assert r.returncode == 3 and said in one_line(r), r.stderr


def test_a_server_that_answers_something_not_http():
    """An SSH banner where a server should be: without --model, the model lookup says it is not HTTP; with it,
    every request is a broken stream, and load.errors says so."""
    pytest.importorskip("aiohttp")
    with HostileServer(b"SSH-2.0-OpenSSH_9.6\r\n") as srv:
        r = load(srv.url, *QUICK)
        assert r.returncode == 3 and "not an HTTP answer" in one_line(r)
        r = load(srv.url, "--model", "m", *QUICK, "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["steps"][0]["errors"] == {"stream": 3}
    assert any(f["id"] == "load.errors" and "not answer in HTTP" in f["cause"] for f in rep["findings"])


def test_a_stream_of_json_arrays_is_a_broken_stream_not_a_crash():
    pytest.importorskip("aiohttp")
    with HostileServer(http_answer(b"data: [1, 2, 3]\n\ndata: [DONE]\n\n")) as srv:
        r = load(srv.url, "--model", "m", *QUICK, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"][0]["errors"] == {"stream": 3}
