"""The framework's CUDA (task 11): torch's version and the CUDA it was built for, read from its install
without importing it; whether it can use CUDA and for which architectures, from a child that imports it.

The import costs seconds (5 s cold on an H200 host), so the child's answer is cached by what it depends
on: the torch build (its path, version file and interpreter), the driver and the visible devices. On a
cache miss the child starts before the driver is read and is waited for until the rest of the snapshot
is read, `WAIT_S` more at most; a child that takes longer is left to finish and fill the cache for the
next check, and its facts say so (`check --refresh` waits for it)."""

from __future__ import annotations

from typing import Any

from gputriage.backends import cache
from gputriage.backends.child import ChildProbe
from gputriage.backends.host import Host
from gputriage.backends.torch_install import build, fingerprint
from gputriage.collect.base import fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Reading, Unavailable

CACHE_NAME = "framework.json"
PROBE_MODULE = "gputriage.probes.torch_info"
MODULE_VERSION = "/sys/module/nvidia/version"  # the loaded driver's version, readable before NVML starts
WAIT_S = 0.3  # how long a snapshot waits for the child beyond its own readings (unless asked to wait for it)
REFRESH_WAIT_S = 60.0  # `check --refresh`: the child's answer is waited for, this long at most
NAMES = (
    "torch.version",
    "torch.cuda.build_version",
    "torch.cuda.available",
    "torch.cuda.arch_list",
    "torch.cuda.error",
)
PROBED = NAMES[2:]  # what only the import answers


def cache_key(fingerprint: str, driver_version: object, environ: dict[str, str]) -> str:
    """What the framework facts depend on: the torch build, the driver, the visible devices."""
    return "|".join([fingerprint, str(driver_version), environ.get("CUDA_VISIBLE_DEVICES", "*")])


def facts_from_info(info: Reading, src: str = "torch:child") -> list[Fact]:
    if isinstance(info, Unavailable):
        return [fact(n, info, src) for n in NAMES]
    if not info.get("installed"):
        why = Unavailable("not_installed", info.get("error", "torch is not importable"))
        return [fact(n, why, src) for n in NAMES]
    get: Any = info.get
    return [
        fact("torch.version", get("version"), src),
        fact("torch.cuda.build_version", get("cuda_build"), src),
        fact("torch.cuda.available", bool(get("available")), src),
        fact("torch.cuda.arch_list", get("arch_list", []), src),
        fact("torch.cuda.error", get("error"), src),
    ]


def unprobed(why: Unavailable) -> list[Fact]:
    """Without the child's answer: the version and the CUDA build from the install (when torch is installed),
    the rest unavailable for `why`."""
    installed = build()
    if installed is None:
        return facts_from_info(Unavailable("not_installed", "torch is not importable"), src="torch:install")
    return [
        fact("torch.version", installed["version"], "torch:install"),
        fact("torch.cuda.build_version", installed["cuda_build"], "torch:install"),
        *(fact(n, why, "torch:child") for n in PROBED),
    ]


class FrameworkProbe:
    """One snapshot's framework facts: `start` as early as the driver's version is known (cached answer, or the
    child started), `facts` at the end."""

    def __init__(self, host: Host, use_cache: bool = True, module: str = PROBE_MODULE) -> None:
        self.host, self.use_cache, self.module = host, use_cache, module
        self.fingerprint = fingerprint()
        self.child: ChildProbe | None = None
        self.cached: dict[str, Any] | None = None
        self.key: str | None = None

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    def early_driver(self) -> str | None:
        """The loaded driver's version from sysfs, before NVML is up (None where it cannot be read)."""
        text = self.host.read_text(MODULE_VERSION, limit=256)
        return text.strip() or None if isinstance(text, str) else None

    def start(self, driver_version: object) -> None:
        """The cached answer for this torch build, driver and visible devices; else the child, started now."""
        if self.fingerprint is None or self.child is not None or self.cached is not None:
            return
        self.key = cache_key(self.fingerprint, driver_version, self.host.environ)
        cached = cache.read(CACHE_NAME) if self.use_cache else None
        if isinstance(cached, dict) and cached.get("key") == self.key:
            self.cached = cached
            return
        self.child = ChildProbe(self.module, "--cache", CACHE_NAME, "--key", self.key)

    def cancel(self) -> None:
        """No GPU after all: the child is not needed."""
        if self.child is not None:
            self.child.stop(0)
            self.child = None

    def facts(self) -> list[Fact]:
        """The framework facts: cached, or the child's answer if it comes in time (all of `REFRESH_WAIT_S` when the
        cache was not to be used), or the install's with the rest said to be coming."""
        if self.cached is not None:
            return facts_from_info(self.cached, src="torch:child (cached)")
        if self.child is None:
            return unprobed(Unavailable("not_installed", "torch is not importable"))
        line = self.child.next_line(WAIT_S if self.use_cache else REFRESH_WAIT_S)
        if line is None and self.child.proc.poll() is None:  # still importing: it fills the cache on its own
            return unprobed(
                Unavailable(
                    "timeout",
                    f"torch's import outlasted check (beyond {WAIT_S:g} s more): its "
                    "answer is cached for the next check (`check --refresh` waits)",
                )
            )
        info = ChildProbe.parse(self.child.module, line)
        self.child.stop(0)
        return facts_from_info(info)
