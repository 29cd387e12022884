"""Recorded samples as the sampler's typed samples: flat NVML streams recorded on a GPU, and whole
`gputriage run` recordings stored in the earlier untyped layout."""

from __future__ import annotations

from typing import Any, Iterable

from gputriage.model.sample import Sample, from_legacy


def from_flat_rows(rows: Iterable[dict[str, Any]]) -> list[Sample]:
    """Rows of one GPU in the flat format of recorded NVML streams (`t`, `util`, `memutil`, `used`,
    `power`, `sm_clk`, `reasons`, `temp`, `gpm` by metric id) → samples."""
    keys = ("util", "memutil", "used", "power", "sm_clk", "reasons", "temp", "gpm")
    out = []
    for r in rows:
        g: dict[str, Any] = {k: r[k] for k in keys if k in r}
        out.append(from_legacy({"t": r["t"], "gpus": [dict(g, index=0)]}))
    return out


def from_untyped(samples: Iterable[dict[str, Any]]) -> list[Sample]:
    return [from_legacy(s) for s in samples]
