"""Container: inside one or not, /dev/nvidia* nodes, visible-devices variables, /dev/shm (task 10)."""

from __future__ import annotations

from gputriage.collect.base import Context, fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Unavailable

CGROUP_MARKERS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("libpod", "podman"),
    ("lxc", "lxc"),
)


def detect(ctx: Context) -> str | None:
    host = ctx.host
    if "KUBERNETES_SERVICE_HOST" in host.environ:
        return "kubernetes"
    if host.exists("/.dockerenv"):
        return "docker"
    if host.exists("/run/.containerenv"):
        return "podman"
    cgroup = host.read_text("/proc/1/cgroup")
    if isinstance(cgroup, str):
        for marker, kind in CGROUP_MARKERS:
            if marker in cgroup:
                return kind
    env = host.read_text("/proc/1/environ")
    if isinstance(env, str):
        for item in env.split("\0"):
            if item.startswith("container="):
                return item.split("=", 1)[1] or "unknown"
    return None


def collect(ctx: Context) -> list[Fact]:
    host = ctx.host
    facts = [fact("host.container.kind", detect(ctx), "host:/.dockerenv,/proc/1/cgroup")]
    dev = host.list_dir("/dev")
    nodes = dev if isinstance(dev, Unavailable) else [f"/dev/{n}" for n in dev if n.startswith("nvidia")]
    facts.append(fact("host.dev.nvidia_nodes", nodes, "host:/dev"))
    for var in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        facts.append(fact(f"env.{var}", host.environ.get(var), "env"))
    shm = host.statvfs("/dev/shm")
    facts.append(
        fact(
            "host.shm.total_bytes", shm if isinstance(shm, Unavailable) else shm["total_bytes"], "os:statvfs(/dev/shm)"
        )
    )
    return facts
