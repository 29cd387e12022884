"""Who holds a GPU: a process's name, user and age, and the container and Kubernetes pod it runs in."""

from __future__ import annotations

from typing import Any, Optional

import msgspec


class Container(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a process's cgroup path and environment say of its container (`backends.cgroup`)."""

    cgroup: str = ""  # the cgroup path (the unified v2 one, else a v1 controller's)
    runtime: Optional[str] = None  # containerd, cri-o, docker, podman; "cri" where the path does not say which
    id: Optional[str] = None  # the container id, 64 hex digits
    pod_uid: Optional[str] = None  # the Kubernetes pod's UID
    qos: Optional[str] = None  # the pod's QoS class: guaranteed, burstable, besteffort
    pod: Optional[str] = None  # the pod's name, namespace and container name, where the environment says them
    namespace: Optional[str] = None
    name: Optional[str] = None

    @property
    def short_id(self) -> Optional[str]:
        """The first 12 digits, as `docker ps` and `crictl ps` show a container id."""
        return self.id[:12] if self.id else None

    @property
    def label(self) -> str:
        """One short name: namespace/pod/container, else the runtime and short id, else the cgroup path."""
        if self.pod:
            return "/".join(x for x in (self.namespace, self.pod, self.name) if x)
        if self.id:
            return f"{self.runtime or 'container'}:{self.short_id}" + (f" ({self.name})" if self.name else "")
        if self.pod_uid:
            return f"pod {self.pod_uid}"
        return self.cgroup or "-"


class ProcessOwner(msgspec.Struct, kw_only=True, omit_defaults=True):
    pid: int
    visible: bool = True  # False: NVML reports a PID this PID namespace does not show (another container's)
    name: Optional[str] = None
    user: Optional[str] = None
    cmdline: Optional[str] = None
    age_s: Optional[float] = None  # since the process started, when it was looked up
    started_s: Optional[float] = None  # unix seconds it started (a live machine's; a recorded one says only its age)
    container: Optional[Container] = None
    note: str = ""  # why a field is missing


class GpuHolder(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A process on a GPU as `check` listed it (a fleet node's result carries them)."""

    gpu: int
    pid: int
    used_bytes: Optional[int] = None
    sm_util_pct: Optional[float] = None  # NVML per-process utilization over the check's window
    owner: Optional[ProcessOwner] = None

    @classmethod
    def from_fact(cls, gpu: int, entry: dict[str, Any]) -> GpuHolder:
        """One entry of a check's gpu.N.processes fact."""
        c = entry.get("container")
        owner = ProcessOwner(
            pid=int(entry["pid"]),
            visible=entry.get("visible", True) is not False,
            name=entry.get("name"),
            user=entry.get("user"),
            cmdline=entry.get("cmdline") or None,
            age_s=entry.get("age_s"),
            note=entry.get("note") or "",
            container=msgspec.convert(c, Container) if isinstance(c, dict) else None,
        )
        return cls(
            gpu=gpu,
            pid=int(entry["pid"]),
            used_bytes=entry.get("used_bytes"),
            sm_util_pct=entry.get("sm_util_pct"),
            owner=owner,
        )
