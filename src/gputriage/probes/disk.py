"""Disk read probes on a path the user names: sequential MB/s and 4 KiB random-read IOPS.

fio is used when installed (O_DIRECT, libaio, queue depth 32 for random reads); otherwise a
built-in reader (O_DIRECT where the filesystem allows it, queue depth 1). The test file is bounded
in size, created in the target directory and removed afterwards, Ctrl-C included. When O_DIRECT is
refused, reads go through the page cache after dropping this file's pages (posix_fadvise), and the
result says so.
"""

from __future__ import annotations

import json
import mmap
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from gputriage.model.fact import Fact
from gputriage.model.probe import ProbeResult
from gputriage.model.reading import Unavailable

BLOCK = 1 << 20
PAGE = 4096


def _write_file(directory: Path, size_bytes: int) -> Path:
    fd, name = tempfile.mkstemp(prefix=".gputriage-disk-", dir=directory)
    try:
        chunk = os.urandom(BLOCK)  # random data: compression and dedup cannot fake the reads
        written = 0
        while written < size_bytes:
            written += os.write(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    return Path(name)


def _drop_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _open_direct(path: Path) -> tuple[int, bool]:
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0)), True
    except OSError:
        _drop_cache(path)
        return os.open(path, os.O_RDONLY), False


def _builtin(path: Path, size_bytes: int, seconds: float) -> list[ProbeResult]:
    fd, direct = _open_direct(path)
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    whole = memoryview(buf)
    page = whole[:PAGE]
    try:
        try:
            os.preadv(fd, [page], 0)
        except OSError:  # the filesystem took O_DIRECT at open but refuses the reads
            os.close(fd)
            _drop_cache(path)
            fd, direct = os.open(path, os.O_RDONLY), False
        cache = "O_DIRECT (page cache bypassed)" if direct else "buffered; this file's cached pages dropped first"
        t0, done = time.perf_counter(), 0
        while done < size_bytes and time.perf_counter() - t0 < seconds:
            n = os.preadv(fd, [whole], done)
            if n <= 0:
                break
            done += n
        seq = done / (time.perf_counter() - t0) / 1e6
        if not direct:
            _drop_cache(path)
        pages = size_bytes // PAGE
        rng = random.Random(0)
        t0, reads = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            os.preadv(fd, [page], rng.randrange(pages) * PAGE)
            reads += 1
        iops = reads / (time.perf_counter() - t0)
    finally:
        os.close(fd)
        page.release()
        whole.release()
        buf.close()
    detail = {"tool": "built-in", "cache": cache, "file_bytes": size_bytes, "path": str(path.parent)}
    return [
        ProbeResult("disk.seq_read", round(seq, 1), "MB/s", detail=detail | {"block_bytes": BLOCK}),
        ProbeResult("disk.rand_read_4k", round(iops), "IOPS", detail=detail | {"queue_depth": 1}),
    ]


def _fio(fio: str, path: Path, size_bytes: int, seconds: float) -> list[ProbeResult] | None:
    out = []
    for name, rw, bs, depth, unit in (
        ("disk.seq_read", "read", "1M", 16, "MB/s"),
        ("disk.rand_read_4k", "randread", "4k", 32, "IOPS"),
    ):
        argv = [
            fio,
            "--name=gputriage",
            f"--filename={path}",
            f"--rw={rw}",
            f"--bs={bs}",
            f"--iodepth={depth}",
            "--ioengine=libaio",
            "--direct=1",
            f"--size={size_bytes}",
            f"--runtime={seconds:g}",
            "--time_based=0",
            "--output-format=json",
        ]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
            job = json.loads(p.stdout)["jobs"][0]["read"]
        except (subprocess.TimeoutExpired, ValueError, KeyError, IndexError, OSError):
            return None
        value = job["bw_bytes"] / 1e6 if unit == "MB/s" else job["iops"]
        out.append(
            ProbeResult(
                name,
                round(value, 1),
                unit,
                detail={
                    "tool": "fio",
                    "cache": "O_DIRECT",
                    "queue_depth": depth,
                    "file_bytes": size_bytes,
                    "path": str(path.parent),
                },
            )
        )
    return out


def probe(directory: str | Path, size_bytes: int = 256 << 20, seconds: float = 3.0) -> list[ProbeResult]:
    """Sequential and random reads of a temporary file in `directory`; the file is always removed."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"{directory}: not a directory")
    free = shutil.disk_usage(directory).free
    if free < 2 * size_bytes:
        raise ValueError(f"{directory}: only {free >> 20} MiB free, the probe needs {2 * size_bytes >> 20} MiB")
    path = _write_file(directory, size_bytes)
    try:
        fio = shutil.which("fio")
        results = _fio(fio, path, size_bytes, seconds) if fio else None
        return results if results else _builtin(path, size_bytes, seconds)
    finally:
        path.unlink(missing_ok=True)


def host_memcpy(size_bytes: int = 256 << 20, repeats: int = 5) -> ProbeResult:
    """Single-threaded host memory copy, counting bytes read + written."""
    src = bytearray(os.urandom(1 << 20)) * (size_bytes >> 20)
    dst = bytearray(len(src))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst[:] = src
        times.append(time.perf_counter() - t0)
    times.sort()
    secs = times[len(times) // 2]
    return ProbeResult(
        "host.memcpy",
        round(2 * size_bytes / secs / 1e9, 1),
        "GB/s",
        detail={"buffer_bytes": size_bytes, "threads": 1, "counted": "bytes read + bytes written"},
    )


CHECK_BYTES = 64 << 20
CHECK_SECONDS = 0.75


def check_facts(directory: str | Path) -> list[Fact]:
    """`check --full`: the quick read probes of the working directory's filesystem, as facts."""
    src = "probe:disk"
    try:
        results = {r.name: r for r in probe(directory, size_bytes=CHECK_BYTES, seconds=CHECK_SECONDS)}
    except (ValueError, OSError) as exc:
        why = Unavailable("error", str(exc))
        return [Fact("host.fs.cwd.seq_read_mbps", why, src), Fact("host.fs.cwd.rand_read_4k_iops", why, src)]
    seq, rnd = results["disk.seq_read"], results["disk.rand_read_4k"]
    return [
        Fact("host.fs.cwd.seq_read_mbps", seq.value, f"{src}:{seq.detail.get('tool')}"),
        Fact("host.fs.cwd.rand_read_4k_iops", rnd.value, f"{src}:{rnd.detail.get('tool')}"),
        Fact(
            "host.fs.cwd.read_probe",
            {"cache": seq.detail.get("cache"), "queue_depth": rnd.detail.get("queue_depth"), "file_bytes": CHECK_BYTES},
            src,
        ),
    ]
