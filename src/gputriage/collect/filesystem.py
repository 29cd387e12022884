"""The filesystem under the working directory: device, type, free space (playbook task 7's context)."""

from __future__ import annotations

from gputriage.backends.procfs import mount_for, parse_mounts
from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable


def collect(ctx: Context) -> list[Fact]:
    cwd = ctx.host.cwd
    facts = [fact("host.fs.cwd.path", cwd, "os:getcwd")]
    mounts = ctx.host.read_text("/proc/mounts")
    mount = None if isinstance(mounts, Unavailable) else mount_for(cwd, parse_mounts(mounts))
    why = mounts if isinstance(mounts, Unavailable) else Unavailable("not_found", f"no mount for {cwd}")
    for key in ("device", "mountpoint", "fstype"):
        facts.append(fact(f"host.fs.cwd.{key}", mount[key] if mount else why, "proc:/proc/mounts"))
    st = ctx.host.statvfs(cwd)
    for key in ("total_bytes", "free_bytes"):
        facts.append(fact(f"host.fs.cwd.{key}", st if isinstance(st, Unavailable) else st[key], "os:statvfs"))
    return facts
