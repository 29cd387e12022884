"""Metric families and the Prometheus text format (version 0.0.4) they are served in, written as dcgm-exporter
writes it: each family's HELP and TYPE, then its series, all under the family's own name.

A family's series carry its name exactly, whatever its type. dcgm-exporter serves its counters without a suffix
(`DCGM_FI_DEV_PCIE_REPLAY_COUNTER`, type counter), and a dashboard built on it selects that name; prometheus-client
names every counter's series `<name>_total` (OpenMetrics' rule), so it cannot serve them. gputriage's own counters
carry the `_total` in their name (`gputriage_regime_changes_total`), as Prometheus's naming asks."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import msgspec

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TYPES = ("gauge", "counter")


class Series(NamedTuple):
    name: str
    labels: dict[str, str]
    value: float


class Family(msgspec.Struct, kw_only=True):
    """One metric: its series named `name`, each with a value for every label of `labels`."""

    name: str
    help: str
    type: str = "gauge"
    labels: list[str] = []
    samples: list[Series] = []

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"a metric is a gauge or a counter, not {self.type!r}")

    def add(self, values: Sequence[str], value: float) -> None:
        """One series: `values` for `labels`, in their order."""
        if len(values) != len(self.labels):
            raise ValueError(f"{self.name}: {len(self.labels)} labels, {len(values)} values")
        self.samples.append(Series(self.name, dict(zip(self.labels, values)), float(value)))


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _escaped(value: str, quote: bool = False) -> str:
    """A label value (`quote`) or a help text, escaped as the text format asks."""
    value = value.replace("\\", "\\\\").replace("\n", "\\n")
    return value.replace('"', '\\"') if quote else value


def text(families: Iterable[Family]) -> bytes:
    """The families in the Prometheus text format (0.0.4): HELP, TYPE and the series of each, labels in the family's
    order; a family with no series is written with its HELP and TYPE alone."""
    out: list[str] = []
    for f in families:
        out.append(f"# HELP {f.name} {_escaped(f.help)}\n")
        out.append(f"# TYPE {f.name} {f.type}\n")
        for s in f.samples:
            labels = ",".join(f'{k}="{_escaped(v, quote=True)}"' for k, v in s.labels.items())
            out.append(f"{s.name}{{{labels}}} {_number(s.value)}\n" if labels else f"{s.name} {_number(s.value)}\n")
    return "".join(out).encode()


Application = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def application(collect: Callable[[], Iterable[Family]]) -> Application:
    """A WSGI application answering every request with `collect()`'s families, made when asked."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD")])
            return [b""]
        body = text(collect())
        start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
        return [body] if environ.get("REQUEST_METHOD") == "GET" else [b""]

    return app
