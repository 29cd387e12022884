"""Which container, and which Kubernetes pod, a process runs in: from its cgroup path and its environment.

Pure functions over the text of /proc/PID/cgroup and the variables of /proc/PID/environ, plus `owner()`, which
reads them through a `Host`. The formats parsed, with where each is documented:

- /proc/PID/cgroup: one line per hierarchy, `hierarchy-ID:controller-list:cgroup-path` (man 7 cgroups,
  "/proc/[pid]/cgroup"); under cgroup v2 a single line `0::/path` (the unified hierarchy). Under v1 the
  container runtimes put a process at the same path in every hierarchy; the memory, cpu or pids one is read.
- Kubernetes: the kubelet puts each pod under `kubepods`, in a QoS-class child for burstable and best-effort
  pods (Guaranteed pods sit directly under it), in a cgroup named after the pod's UID
  (kubernetes.io/docs/concepts/architecture/cgroups, "Pod QoS classes", and the kubelet's
  pkg/kubelet/cm/pod_container_manager_linux.go). With the cgroupfs driver: `/kubepods/burstable/pod<uid>/<id>`;
  with the systemd driver (the default since kubeadm 1.22; kubernetes.io/docs/tasks/administer-cluster/kubeadm/
  configure-cgroup-driver) the names become systemd units, the UID's dashes turned into underscores
  (pkg/kubelet/cm/cgroup_manager_linux.go, escapeSystemdCgroupName):
  `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<u_i_d>.slice/<runtime>-<id>.scope`.
- The container's own scope under systemd: containerd's CRI plugin `cri-containerd-<id>.scope`, CRI-O
  `crio-<id>.scope` (its monitor `crio-conmon-<id>.scope`), Docker `docker-<id>.scope` (dockerd's
  native.cgroupdriver=systemd), Podman `libpod-<id>.scope`; under cgroupfs Docker's `/docker/<id>` and the
  kubelet's `/kubepods/.../pod<uid>/<id>`. A container id is 64 hex digits (docs.docker.com, "docker ps
  --no-trunc").
- The environment: Kubernetes puts `KUBERNETES_SERVICE_HOST` in every container (kubernetes.io/docs/concepts/
  containers/container-environment) and names a pod's host after the pod (`HOSTNAME` = metadata.name unless the
  spec sets a hostname: kubernetes.io/docs/concepts/services-networking/dns-pod-service); a pod's name, namespace
  and container reach the environment only where its spec asks (the Downward API, kubernetes.io/docs/concepts/
  workloads/pods/downward-api): `POD_NAME`, `POD_NAMESPACE`, `CONTAINER_NAME` by convention. The namespace is
  also in the service-account mount, /var/run/secrets/kubernetes.io/serviceaccount/namespace, seen from the
  process's root (kubernetes.io/docs/tasks/run-application/access-api-from-pod).
"""

from __future__ import annotations

import re
import time
from typing import Mapping

from gputriage.backends.host import Host
from gputriage.model.owner import Container, ProcessOwner
from gputriage.model.reading import Unavailable

# the hierarchies a v1 runtime places the container in (any one will do; memory first, as runc creates it)
V1_CONTROLLERS = ("memory", "cpu,cpuacct", "cpu", "pids", "devices", "name=systemd")
_ID = r"[0-9a-f]{64}"
_UID = r"[0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}"
# (runtime, pattern of one path component holding a container id)
SCOPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("containerd", re.compile(rf"cri-containerd-({_ID})\.scope")),
    ("cri-o", re.compile(rf"crio-({_ID})\.scope")),
    ("docker", re.compile(rf"docker-({_ID})\.scope")),
    ("podman", re.compile(rf"libpod-({_ID})\.scope")),
)
_MONITOR = re.compile(r"(crio|libpod)-conmon-")  # the runtime's monitor process, not the container's
# a prefix where the kubelet runs nested (kind's nodes: kubelet-kubepods-...)
_POD_SYSTEMD = re.compile(rf"(?:[\w-]*-)?kubepods(?:-(burstable|besteffort))?-pod({_UID})\.slice")
_POD_CGROUPFS = re.compile(rf"pod({_UID})")
_QOS_CGROUPFS = ("burstable", "besteffort")
POD_ENV = ("POD_NAME", "POD_NAMESPACE", "CONTAINER_NAME", "HOSTNAME", "KUBERNETES_SERVICE_HOST")
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """/proc/PID/cgroup as {controller list: path}; the v2 line's key is "" (man 7 cgroups)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) == 3 and parts[0].isdigit():
            out[parts[1]] = parts[2]
    return out


def cgroup_path(text: str) -> str | None:
    """The process's cgroup: of its paths (the unified v2 one first, then the v1 controllers' where runtimes place
    containers), the first that names a container or pod, else the first below the root, else the root. A hybrid
    host lists both kinds, and either may be the one that holds the container."""
    lines = parse_proc_cgroup(text)
    ordered = [lines.get(""), *(lines.get(c) for c in V1_CONTROLLERS), *lines.values()]
    paths = list(dict.fromkeys(p for p in ordered if p))
    for p in paths:
        c = container_of(p)
        if c.id or c.pod_uid:
            return p
    return next((p for p in paths if p != "/"), paths[0] if paths else None)


def container_of(path: str) -> Container:
    """The container runtime, container id, pod UID and QoS class a cgroup path names (whichever it does)."""
    c = Container(cgroup=path)
    parts = [p for p in path.split("/") if p]
    for i, part in enumerate(parts):
        if _MONITOR.match(part):
            return c  # the runtime's monitor: no container's process
        for runtime, pattern in SCOPES:
            m = pattern.fullmatch(part)
            if m:
                c.runtime, c.id = runtime, m.group(1)
        m = _POD_SYSTEMD.fullmatch(part)
        if m:
            c.pod_uid, c.qos = m.group(2).replace("_", "-"), m.group(1) or "guaranteed"
            continue
        if "kubepods" in parts[:i]:
            m = _POD_CGROUPFS.fullmatch(part)
            if m:
                c.pod_uid = m.group(1)
                c.qos = parts[i - 1] if i > 0 and parts[i - 1] in _QOS_CGROUPFS else "guaranteed"
            elif c.pod_uid and re.fullmatch(_ID, part):  # the container under its pod
                c.id = part
        if i > 0 and parts[i - 1] == "docker" and re.fullmatch(_ID, part):  # /docker/<id>
            c.runtime, c.id = "docker", part
    if c.pod_uid and c.runtime is None and c.id is not None:
        c.runtime = "cri"  # under cgroupfs the path does not say which CRI runtime
    return c


def with_environ(c: Container, env: Mapping[str, str], namespace_file: str | None = None) -> Container:
    """The pod's name, namespace and container name where the environment (or the service-account mount) says
    them: POD_NAME, else HOSTNAME inside Kubernetes; POD_NAMESPACE, else the mount's namespace; CONTAINER_NAME."""
    in_kubernetes = "KUBERNETES_SERVICE_HOST" in env or c.pod_uid is not None
    pod = env.get("POD_NAME") or (env.get("HOSTNAME") if in_kubernetes else None)
    namespace = env.get("POD_NAMESPACE") or ((namespace_file or "").strip() or None)
    return Container(
        cgroup=c.cgroup,
        runtime=c.runtime,
        id=c.id,
        pod_uid=c.pod_uid,
        qos=c.qos,
        pod=pod or None,
        namespace=namespace,
        name=env.get("CONTAINER_NAME") or None,
    )


def owner(host: Host, pid: int) -> ProcessOwner:
    """Who a process is: its name, user, age, cgroup, container and pod; `visible` False where this PID namespace
    does not show it (NVML reports host PIDs inside a container)."""
    info = host.process_info(pid)
    if isinstance(info, Unavailable) or not isinstance(info, dict):
        why = info.detail if isinstance(info, Unavailable) else "no process information"
        return ProcessOwner(
            pid=pid, visible=not (isinstance(info, Unavailable) and info.reason == "not_found"), note=why
        )
    text = host.read_text(f"/proc/{pid}/cgroup")
    path = cgroup_path(text) if isinstance(text, str) else None
    container = container_of(path) if path is not None else None
    env = host.process_environ(pid, POD_ENV)
    if container is not None and isinstance(env, dict):
        ns = (
            host.read_text(f"/proc/{pid}/root{SERVICE_ACCOUNT_NAMESPACE}", limit=256)
            if "POD_NAMESPACE" not in env and ("KUBERNETES_SERVICE_HOST" in env or container.pod_uid)
            else None
        )
        container = with_environ(container, env, ns if isinstance(ns, str) else None)
    age = info.get("age_s")
    age_s = round(float(age), 1) if isinstance(age, (int, float)) else None
    return ProcessOwner(
        pid=pid,
        name=info.get("name") or None,
        user=info.get("user") or None,
        cmdline=info.get("cmdline") or None,
        age_s=age_s,
        container=container,
        started_s=round(time.time() - age_s, 1) if age_s is not None and host.is_live else None,
    )
