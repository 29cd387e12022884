"""py-spy, where it is installed and permitted: the Python stacks of a process gputriage did not start (`watch`).

`py-spy dump --pid PID --json` reads another process's memory (ptrace): root can, and a user can read their own
processes where the kernel lets them (`/proc/sys/kernel/yama/ptrace_scope` 0; 1 lets only a parent or a program
with CAP_SYS_PTRACE; 2 only root; 3 nobody); in a container it needs the SYS_PTRACE capability. The dump pauses
the target for the few milliseconds it reads its stacks. When py-spy cannot, the reason is said in one line:
not installed, no permission (with ptrace_scope's value and what would allow it), not a Python process, gone.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from gputriage.backends.commands import CommandResult, run_command
from gputriage.model.reading import Reading, Unavailable

DUMP_TIMEOUT_S = 10.0
PTRACE_SCOPE = Path("/proc/sys/kernel/yama/ptrace_scope")
INSTALL = "pip install py-spy"


def executable() -> str | None:
    """py-spy on the PATH, or beside this interpreter (a virtual environment's bin/)."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() and os.access(beside, os.X_OK) else None


def ptrace_scope(path: Path = PTRACE_SCOPE) -> int | None:
    """The kernel's Yama ptrace_scope (None: no Yama, or unreadable)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def permission_hint(scope: int | None, euid: int | None = None) -> str:
    """What would let py-spy read another process, given ptrace_scope."""
    euid = os.geteuid() if euid is None and hasattr(os, "geteuid") else euid
    said = f"kernel.yama.ptrace_scope is {scope}" if scope is not None else "ptrace is refused"
    if euid == 0:
        return f"{said}; as root in a container, start it with --cap-add SYS_PTRACE"
    if scope == 3:
        return f"{said}: no process may be traced until reboot"
    if scope == 2:
        return f"{said}: only root can (sudo)"
    return (
        f"{said}: run it as root, give py-spy CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep), or set "
        "ptrace_scope to 0; in a container, --cap-add SYS_PTRACE"
    )


def why_failed(pid: int, stderr: str, scope: int | None = None, euid: int | None = None) -> Unavailable:
    """py-spy's own error, said plainly (its messages as py-spy 0.4 prints them)."""
    text = stderr.lower()
    if "permission denied" in text or "operation not permitted" in text:
        return Unavailable("no_permission", f"py-spy may not read process {pid}: {permission_hint(scope, euid)}")
    if "failed to find python version" in text or "not a python" in text:
        return Unavailable("not_supported", f"process {pid} is not a Python process py-spy can read")
    if "check that the process is running" in text or "no such process" in text:
        return Unavailable("not_found", f"process {pid} has ended")
    first = next((line.strip() for line in stderr.splitlines() if line.strip()), "no output")
    return Unavailable("error", f"py-spy on process {pid}: {first[:200]}")


def unavailable() -> Unavailable | None:
    """Why py-spy cannot be used at all here (None: it is installed)."""
    if executable() is None:
        return Unavailable("not_installed", f"py-spy is not installed ({INSTALL})")
    return None


def missing(reader: object) -> Unavailable | None:
    """Why py-spy cannot be used, where `reader` is this module's `dump` (a test's stand-in is never missing)."""
    return unavailable() if reader is dump else None


def dump(pid: int, timeout_s: float = DUMP_TIMEOUT_S) -> Reading:
    """The threads of a Python process as py-spy dumps them (a list of dicts), or why not."""
    exe = executable()
    if exe is None:
        return Unavailable("not_installed", f"py-spy is not installed ({INSTALL})")
    result = run_command([exe, "dump", "--pid", str(pid), "--json"], timeout_s=timeout_s)
    if isinstance(result, Unavailable):
        return result
    assert isinstance(result, CommandResult)
    if result.returncode != 0:
        return why_failed(pid, result.stderr + "\n" + result.stdout, ptrace_scope())
    try:
        threads: Any = json.loads(result.stdout)
    except ValueError:
        return Unavailable("error", f"py-spy on process {pid}: its output is not JSON")
    if not isinstance(threads, list):
        return Unavailable("error", f"py-spy on process {pid}: no list of threads in its output")
    return threads
