"""Parsers for /proc and /sys text: pure functions, shared by check and the sampler."""

from __future__ import annotations

from typing import Any


def parse_proc_stat(text: str) -> dict[str, list[int]]:
    """/proc/stat → {'cpu': [...jiffies], 'cpu0': [...], ...}."""
    out: dict[str, list[int]] = {}
    for line in text.splitlines():
        if line.startswith("cpu"):
            name, *values = line.split()
            out[name] = [int(v) for v in values]
    return out


def cpu_busy_pct(before: list[int], after: list[int]) -> tuple[float, float]:
    """(busy %, iowait %) between two /proc/stat rows of one CPU. Busy excludes idle and iowait."""
    delta = [b - a for a, b in zip(before, after)]
    # guest time is already counted in user; drop guest and guest_nice (fields 8, 9)
    total = sum(delta[:8])
    if total <= 0:
        return 0.0, 0.0
    idle = delta[3]
    iowait = delta[4] if len(delta) > 4 else 0
    return 100.0 * (total - idle - iowait) / total, 100.0 * iowait / total


def keyed_values(text: str, keys: tuple[str, ...]) -> dict[str, int]:
    """The same as parse_keyed for a few keys only, without splitting every line (a sampler reads
    /proc/vmstat and /proc/meminfo every second for two or three of their ~200 lines)."""
    out: dict[str, int] = {}
    for key in keys:
        pos, after = -1, len(key)
        while True:  # the key at a line start, followed by ':' or ' '
            pos = text.find(key, pos + 1)
            if pos < 0 or ((pos == 0 or text[pos - 1] == "\n") and text[pos + after : pos + after + 1] in (":", " ")):
                break
        if pos < 0:
            continue
        end = text.find("\n", pos)
        try:
            out[key] = int(text[pos + after : end if end >= 0 else None].lstrip(": ").split()[0])
        except (ValueError, IndexError):
            continue
    return out


def parse_keyed(text: str, sep: str | None = None) -> dict[str, int]:
    """'Key: 123 kB' or 'key 123' lines → {key: int}. Values in kB stay in kB."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.replace(":", " ").split(sep)
        if len(parts) >= 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out


def parse_diskstats(text: str) -> tuple[int, int]:
    """Total sectors read and written by whole disks (partitions and virtual devices skipped)."""
    rd = wr = 0
    for line in text.splitlines():
        f = line.split()
        if len(f) < 10:
            continue
        name = f[2]
        partition = name[-1].isdigit() and not name.startswith("nvme")
        if name.startswith(("loop", "ram", "dm-", "md", "zram")) or partition:
            continue
        if name.startswith("nvme") and "p" in name[4:]:
            continue
        rd += int(f[5])
        wr += int(f[9])
    return rd * 512, wr * 512


def parse_psi(text: str) -> dict[str, float]:
    """/proc/pressure/* → {'some_avg10': .., 'some_avg60': .., 'full_avg10': ..}."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        kind, *fields = line.split()
        for field in fields:
            key, _, value = field.partition("=")
            if key.startswith("avg"):
                out[f"{kind}_{key}"] = float(value)
    return out


def parse_net_dev(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/dev → {iface: {rx_bytes, rx_packets, rx_errors, rx_drops, tx_...}}."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines()[2:]:
        if ":" not in line:
            continue
        name, _, rest = line.partition(":")
        v = [int(x) for x in rest.split()]
        if len(v) < 16:
            continue
        out[name.strip()] = {
            "rx_bytes": v[0],
            "rx_packets": v[1],
            "rx_errors": v[2],
            "rx_drops": v[3],
            "tx_bytes": v[8],
            "tx_packets": v[9],
            "tx_errors": v[10],
            "tx_drops": v[11],
        }
    return out


def parse_mounts(text: str) -> list[dict[str, Any]]:
    """/proc/mounts → [{device, mountpoint, fstype}]."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out.append({"device": parts[0], "mountpoint": parts[1].replace("\\040", " "), "fstype": parts[2]})
    return out


def mount_for(path: str, mounts: list[dict[str, Any]]) -> dict[str, Any] | None:
    best = None
    for m in mounts:
        mp = m["mountpoint"]
        if path == mp or path.startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(mp) >= len(best["mountpoint"]):
                best = m
    return best
