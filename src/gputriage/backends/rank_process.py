"""A rank's process as the sampler reads it beside its stack sampler's report: its CPU time and the cores it may
run on (Linux's affinity mask). A process that ended or denies access reads as None."""

from __future__ import annotations

import os

import psutil


def cpu_s(pid: int) -> float | None:
    """The process's user + system seconds, every thread."""
    try:
        t = psutil.Process(pid).cpu_times()
    except (psutil.Error, OSError):
        return None
    return float(t.user + t.system)


def cores(pid: int) -> list[int] | None:
    """The cores the process may run on."""
    try:
        return sorted(os.sched_getaffinity(pid))
    except (AttributeError, OSError):
        return None


def cpu_list(cores: list[int]) -> str:
    """Cores as Linux writes a CPU list: "0-3,8"."""
    out: list[str] = []
    for c in sorted(set(cores)):
        if out and "-" not in out[-1].split(",")[-1] and int(out[-1]) == c - 1:
            out[-1] = f"{out[-1]}-{c}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def parse_cpu_list(text: str) -> list[int]:
    """A CPU list ("0-3,8") as its cores."""
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def environ(pid: int) -> dict[str, str] | None:
    """A process's environment as it started (`/proc/PID/environ`: readable for one's own processes, or as root)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out
