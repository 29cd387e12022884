"""Opening a trace: a cut or corrupt .json.gz gives up what came before the damage, however little (a
partial analysis, as a cut plain .json gets), and `report` answers a broken one as `trace` does (exit 3)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from gputriage import api
from gputriage.trace.files import Salvaging, read_salvaged

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"
RAW = gzip.decompress((TRACES / "healthy.json.gz").read_bytes())  # 125 kB of JSON: well under a megabyte
PACKED = gzip.compress(RAW, mtime=0)  # the same bytes in every test process (-n auto collects ids each)
GT = [sys.executable, "-m", "gputriage"]


def gt(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(GT + list(args), capture_output=True, text=True, timeout=120)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "data, problem",
    [
        (PACKED, None),
        (gzip.compress(RAW[:1000], mtime=0) + gzip.compress(RAW[1000:], mtime=0), None),  # as `cat a.gz b.gz`
        (PACKED + bytes(16), None),  # zero padding after the data, as some tools write
        (PACKED + b"junk", "not gzip"),
    ],
    ids=["whole", "two-members", "zero-padding", "trailing-junk"],
)
def test_a_whole_file_is_read_whole(tmp_path, data, problem):
    out, found = read_salvaged(write(tmp_path, "t.json.gz", data))
    assert out == RAW
    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize("keep", [0.05, 0.3, 0.5, 0.9, 0.999])
def test_a_cut_file_gives_up_what_came_before_the_cut(tmp_path, keep):
    cut = PACKED[: int(len(PACKED) * keep)]
    out, problem = read_salvaged(write(tmp_path, "t.json.gz", cut))
    assert RAW.startswith(out) and problem is not None and "ended before" in problem
    assert out == zlib.decompressobj(wbits=31).decompress(cut)  # every byte the cut data inflates to


def test_corrupt_data_keeps_what_came_before_it(tmp_path):
    damaged = bytearray(PACKED)
    at = len(damaged) // 2
    damaged[at : at + 64] = os.urandom(64)
    out, problem = read_salvaged(write(tmp_path, "t.json.gz", bytes(damaged)))
    assert problem is not None and "zlib" in problem
    assert len(out) > len(RAW) * 0.3  # far more than nothing: what the first half inflated to


def test_reads_in_small_pieces_give_the_same_bytes(tmp_path):
    path = write(tmp_path, "t.json.gz", PACKED[: len(PACKED) // 2])
    whole, _ = read_salvaged(path)
    with Salvaging(open(path, "rb")) as fh:
        pieces = iter(lambda: fh.read(777), b"")
        assert b"".join(pieces) == whole and fh.read_bytes == len(whole)


def test_a_cut_gzip_trace_under_a_megabyte_is_analyzed_as_a_cut_plain_one(tmp_path):
    plain = api.analyze_trace([write(tmp_path, "cut.json", RAW[: len(RAW) // 2])])
    packed = api.analyze_trace([write(tmp_path, "cut.json.gz", PACKED[: len(PACKED) // 2])])
    for report in (plain, packed):
        assert report.ranks and report.ranks[0].events > 0
    rank = packed.ranks[0]
    assert any("cut or corrupt" in p for p in rank.problems)
    assert rank.verdict is not None and rank.verdict.bottleneck == plain.ranks[0].verdict.bottleneck
    r = gt("trace", str(tmp_path / "cut.json.gz"))
    assert r.returncode == 0 and "cut or corrupt" in r.stdout


@pytest.mark.parametrize(
    "data",
    [
        b"\x1f\x8b" + bytes(range(256)) * 8,
        PACKED[:10],
        PACKED[:20] + bytes(i * 37 % 256 for i in range(200)) + PACKED[220:],
    ],
    ids=["magic-then-noise", "header-only", "damaged-at-the-start"],
)
def test_a_gzip_file_with_nothing_readable_is_exit_3_for_trace_and_report(tmp_path, data):
    path = write(tmp_path, "broken.json.gz", data)
    for args in (("trace", str(path)), ("report", str(path), "-o", str(tmp_path / "r.html"))):
        r = gt(*args)
        assert r.returncode == 3, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and "internal error" not in r.stderr


def test_a_gzipped_report_file_that_is_cut_is_refused_in_one_line(tmp_path):
    check = gt("check", "--from", str(TRACES.parent / "snapshot_idle.json"), "--json", "--fail-on", "never").stdout
    packed = gzip.compress(check.encode())
    assert json.loads(check)["schema"] == "gputriage.check"
    good = write(tmp_path, "check.json.gz", packed)
    assert gt("report", str(good), "-o", str(tmp_path / "ok.html")).returncode == 0
    cut = write(tmp_path, "cut.json.gz", packed[: len(packed) // 2])
    r = gt("report", str(cut), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 3 and "not a readable gzip file" in r.stderr


def test_a_decompression_error_is_not_raised_past_the_reader(tmp_path):
    with pytest.raises(zlib.error):
        zlib.decompress(PACKED[:20] + bytes(100), wbits=31)  # what the reader stands between the user and
    out, problem = read_salvaged(write(tmp_path, "t.json.gz", PACKED[:20] + bytes(100)))
    assert problem is not None and len(out) < 200
