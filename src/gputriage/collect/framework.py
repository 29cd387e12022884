"""The framework's CUDA, when torch is importable: build CUDA, availability, arch list (task 11)."""

from __future__ import annotations

from typing import Any

from gputriage.collect.base import fact
from gputriage.model.fact import Fact
from gputriage.model.reading import Reading, Unavailable

CACHE_NAME = "framework.json"


def cache_key(fingerprint: str, driver_version: object, environ: dict[str, str]) -> str:
    """What the framework facts depend on: the torch build, the driver, the visible devices."""
    return "|".join([fingerprint, str(driver_version), environ.get("CUDA_VISIBLE_DEVICES", "*")])


def facts_from_info(info: Reading, src: str = "torch:child") -> list[Fact]:
    names = ("torch.version", "torch.cuda.build_version", "torch.cuda.available", "torch.cuda.arch_list",
             "torch.cuda.error")
    if isinstance(info, Unavailable):
        return [fact(n, info, src) for n in names]
    if not info.get("installed"):
        why = Unavailable("not_installed", info.get("error", "torch is not importable"))
        return [fact(n, why, src) for n in names]
    get: Any = info.get
    return [
        fact("torch.version", get("version"), src),
        fact("torch.cuda.build_version", get("cuda_build"), src),
        fact("torch.cuda.available", bool(get("available")), src),
        fact("torch.cuda.arch_list", get("arch_list", []), src),
        fact("torch.cuda.error", get("error"), src),
    ]
