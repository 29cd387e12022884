"""Host readers rooted at a configurable path, so tests can point them at a recorded machine.

Everything read is kept in `records` (path → text, or the Unavailable) so a snapshot carries the
raw sources its facts were parsed from.
"""

from __future__ import annotations

import errno
import os
import socket
import time
from pathlib import Path
from typing import Any

from gputriage.backends.commands import CommandResult, run_command
from gputriage.model.reading import Reading, Unavailable

KMSG_MAX_BYTES = 8 * 1024 * 1024
CLOCK_TICKS_PER_S = 100  # USER_HZ: the unit of /proc/PID/stat's times, 100 on x86-64 and arm64 (sysconf(_SC_CLK_TCK))


class Host:
    def __init__(self, root: str | Path = "/", environ: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.root = Path(root)
        self.environ = dict(os.environ if environ is None else environ)
        self.cwd = cwd if cwd is not None else os.getcwd()
        self.records: dict[str, Any] = {}
        self._kept: dict[str, tuple[int, int]] = {}  # path → (open fd, read size) for reread

    @property
    def is_live(self) -> bool:
        """True when reading the machine this process runs on (root '/')."""
        return str(self.root) == "/"

    def path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def _record(self, key: str, reading: Reading) -> Reading:
        self.records[key] = reading.to_json() | {"unavailable": True} if isinstance(reading, Unavailable) else reading
        return reading

    def read_text(self, path: str, limit: int = 1 << 20) -> Reading:
        try:
            with open(self.path(path), "rb") as fh:
                text = fh.read(limit).decode(errors="replace")
        except FileNotFoundError:
            return self._record(path, Unavailable("not_found", path))
        except PermissionError:
            return self._record(path, Unavailable("no_permission", path))
        except OSError as exc:
            return self._record(path, Unavailable("error", f"{path}: {exc.strerror or exc}"))
        return self._record(path, text)

    def reread(self, path: str) -> Reading:
        """The text of a file read again and again (a sampler's /proc files): on the live machine the
        file stays open and is read from offset 0, which regenerates a /proc file without the cost of
        opening it each time. Not recorded. `close()` lets the files go."""
        if not self.is_live:
            return self.read_text(path)
        fd, size = self._kept.get(path, (-1, 16384))
        try:
            if fd < 0:
                fd = os.open(path, os.O_RDONLY)
            data = os.pread(fd, size, 0)
            while len(data) == size:  # the buffer was full: read the whole file with a larger one
                size *= 2
                data = os.pread(fd, size, 0)
        except OSError:
            if fd >= 0:
                os.close(fd)
            self._kept.pop(path, None)
            return self.read_text(path)
        self._kept[path] = (fd, size)
        return data.decode(errors="replace")

    def close(self) -> None:
        for fd, _ in self._kept.values():
            os.close(fd)
        self._kept.clear()

    def list_dir(self, path: str) -> Reading:
        try:
            return sorted(os.listdir(self.path(path)))
        except FileNotFoundError:
            return Unavailable("not_found", path)
        except PermissionError:
            return Unavailable("no_permission", path)
        except OSError as exc:
            return Unavailable("error", f"{path}: {exc.strerror or exc}")

    def exists(self, path: str) -> bool:
        return os.path.lexists(self.path(path))

    def statvfs(self, path: str) -> Reading:
        target = path if self.is_live else str(self.path(path))
        try:
            st = os.statvfs(target)
        except OSError as exc:
            return Unavailable("not_found" if exc.errno == errno.ENOENT else "error", f"{path}: {exc.strerror}")
        return {"total_bytes": st.f_blocks * st.f_frsize, "free_bytes": st.f_bavail * st.f_frsize}

    def hostname(self) -> str:
        text = self.read_text("/proc/sys/kernel/hostname")
        return text.strip() if isinstance(text, str) else socket.gethostname()

    def affinity(self) -> Reading:
        """CPUs this process may run on (live), else from the recorded /proc/self/status."""
        if self.is_live and hasattr(os, "sched_getaffinity"):
            return sorted(os.sched_getaffinity(0))
        status = self.read_text("/proc/self/status")
        if isinstance(status, Unavailable):
            return status
        for line in status.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return parse_cpu_list(line.split(":", 1)[1])
        return Unavailable("not_found", "Cpus_allowed_list")

    def process_info(self, pid: int) -> Reading:
        """Name, user, command line and age (`age_s`, since it started) of a process, through psutil when live,
        else from the recorded /proc (the user named through /etc/passwd)."""
        if self.is_live:
            import psutil

            try:
                p = psutil.Process(pid)
                with p.oneshot():
                    return {
                        "name": p.name(),
                        "user": p.username(),
                        "cmdline": " ".join(p.cmdline())[:200],
                        "age_s": max(0.0, time.time() - p.create_time()),
                    }
            except psutil.NoSuchProcess:
                return Unavailable("not_found", f"pid {pid} is not in this PID namespace")
            except psutil.AccessDenied:
                return Unavailable("no_permission", f"pid {pid}")
            except Exception as exc:  # psutil raises a few odd ones on exotic kernels
                return Unavailable("error", f"pid {pid}: {exc}")
        status = self.read_text(f"/proc/{pid}/status")
        if isinstance(status, Unavailable):
            return Unavailable("not_found", f"pid {pid} is not in this PID namespace")
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uid = fields.get("Uid", "").split()
        return {
            "name": fields.get("Name", "").strip(),
            "user": self._user_name(uid[0]) if uid else "",
            "cmdline": "",
            "age_s": self._recorded_age_s(pid),
        }

    def _user_name(self, uid: str) -> str:
        """A recorded machine's user name for a uid, from its /etc/passwd (the uid where it does not say)."""
        passwd = self.read_text("/etc/passwd")
        for line in passwd.splitlines() if isinstance(passwd, str) else []:
            parts = line.split(":")
            if len(parts) > 2 and parts[2] == uid:
                return parts[0]
        return uid

    def _recorded_age_s(self, pid: int) -> float | None:
        """Seconds since a recorded process started: the uptime then, less its start time (/proc/PID/stat field
        22, clock ticks after boot; proc(5)), as `ps -o etimes` counts it."""
        stat, uptime = self.read_text(f"/proc/{pid}/stat"), self.read_text("/proc/uptime")
        if not isinstance(stat, str) or not isinstance(uptime, str):
            return None
        try:
            start_ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
            return max(0.0, float(uptime.split()[0]) - start_ticks / CLOCK_TICKS_PER_S)
        except (ValueError, IndexError):
            return None

    def process_environ(self, pid: int, names: tuple[str, ...]) -> Reading:
        """The variables `names` of a process's environment, {name: value} for those it has. Neither the rest of
        it nor these are kept in `records`: an environment can hold secrets, and a snapshot is shared."""
        try:
            with open(self.path(f"/proc/{pid}/environ"), "rb") as fh:
                data = fh.read(1 << 20)
        except FileNotFoundError:
            return Unavailable("not_found", f"/proc/{pid}/environ")
        except PermissionError:
            return Unavailable("no_permission", f"/proc/{pid}/environ (another user's process)")
        except OSError as exc:
            return Unavailable("error", f"/proc/{pid}/environ: {exc.strerror or exc}")
        return environ_values(data, names)

    def kernel_log(self) -> Reading:
        """The kernel ring buffer: `dmesg`, else /dev/kmsg; denied → Unavailable(no_permission)."""
        if not self.is_live:
            text = self.read_text("/dev/kmsg", limit=KMSG_MAX_BYTES)
            return text
        result = run_command(["dmesg", "--kernel", "--nopager"], timeout_s=5.0)
        if isinstance(result, CommandResult) and result.returncode == 0:
            self.records["dmesg"] = result.stdout
            return result.stdout
        denied = isinstance(result, CommandResult) and "not permitted" in result.stderr
        text = self._read_kmsg()
        if isinstance(text, str):
            self.records["/dev/kmsg"] = text
            return text
        if denied or text.reason == "no_permission":
            return Unavailable("no_permission", "dmesg and /dev/kmsg refused (kernel.dmesg_restrict)")
        return text

    def _read_kmsg(self) -> Reading:
        try:
            fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        except PermissionError:
            return Unavailable("no_permission", "/dev/kmsg")
        except OSError as exc:
            return Unavailable("not_found", f"/dev/kmsg: {exc.strerror}")
        lines: list[str] = []
        total = 0
        deadline = time.monotonic() + 2.0
        try:
            while total < KMSG_MAX_BYTES and time.monotonic() < deadline:
                try:
                    rec = os.read(fd, 8192)
                except BlockingIOError:
                    break
                except OSError as exc:
                    if exc.errno == errno.EPIPE:  # record overwritten while reading: go on
                        continue
                    break
                if not rec:
                    break
                total += len(rec)
                # "pri,seq,usec,flags;message" → message
                head, _, msg = rec.decode(errors="replace").partition(";")
                lines.append(msg.split("\n", 1)[0])
        finally:
            os.close(fd)
        return "\n".join(lines)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def monotonic(self) -> float:
        return time.monotonic()


def parse_cpu_list(text: str) -> list[int]:
    """'0-3,8,10-11' → [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


def environ_values(data: bytes, names: tuple[str, ...]) -> dict[str, str]:
    """The variables `names` of /proc/PID/environ's NUL-separated NAME=value entries, and only those."""
    wanted = {n.encode() for n in names}
    out: dict[str, str] = {}
    for entry in data.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name in wanted:
            out[name.decode()] = value.decode(errors="replace")
    return out


def cpu_mask_words(words: list[int]) -> list[int]:
    """NVML's CPU affinity (list of 64-bit words, bit i of word w = CPU 64*w+i) → CPU ids."""
    cpus = []
    for w, word in enumerate(words):
        for bit in range(64):
            if int(word) >> bit & 1:
                cpus.append(64 * w + bit)
    return cpus
