"""The exporter as `gputriage exporter` wires it (its live label, regimes, idle-held judge and renderer), replayed on
recorded facts with no thread and no GPU: an H200's bf16 GEMM loop with every pipe GPM gives, the processes it listed
with one computing and one holding 20 GiB idle for eleven minutes of the samples' clock (a Kubernetes node's
cgroups), the recorded check of that machine, a price. What it serves is the exporter's own code on those facts; and
the text of a scrape, read as Prometheus reads it (names exactly as served, no suffix added or removed)."""

from __future__ import annotations

import gzip
import json
import re
import time
from pathlib import Path
from typing import Any

import msgspec

from gputriage.testing.fake_host import FakeHost
from gputriage.testing.fake_nvml import FakeNvml
from gputriage.testing.stream_nvml import StreamNvml

FIXTURES = Path(__file__).parent / "fixtures"
# the bf16 GEMM loop recorded on an H200 with every pipe GPM gives (tensor, fp16, fp32, fp64, DRAM)
PIPES = json.loads(gzip.decompress((FIXTURES / "h200" / "runs_pipes.json.gz").read_bytes()))["healthy"]["samples"]
GPM_IDS = {
    "sm_active_pct": 2,
    "sm_occupancy_pct": 3,
    "tensor_active_pct": 5,
    "dram_active_pct": 10,
    "fp64_active_pct": 11,
    "fp32_active_pct": 12,
    "fp16_active_pct": 13,
    "pcie_tx_mib_per_s": 20,
    "pcie_rx_mib_per_s": 21,
}
HOLDERS = FIXTURES / "gpu_holders"
RECORDED = HOLDERS / "snapshot_two_processes.json"
PRICE_PER_GPU_HOUR = 3.5
IDLE_HELD_FOR_S = 660.0  # past the 10 minutes after which a process holding memory with no kernel is named


def stream_rows() -> list[dict[str, Any]]:
    """The recorded loop's steady samples as the rows a stream replays (GPM keyed by NVML's metric ids)."""
    rows = []
    for s in PIPES:
        g = s["gpus"][0] if s["gpus"] else {}
        if g.get("util_pct", 0) >= 90:
            rows.append(
                {
                    "util": g["util_pct"],
                    "memutil": g["mem_util_pct"],
                    "used": g["used_bytes"],
                    "power": g["power_mw"],
                    "sm_clk": g["sm_clock_mhz"],
                    "reasons": g["clock_event_reasons"],
                    "temp": g["temperature_c"],
                    "gpm": {str(i): g[k] for k, i in GPM_IDS.items() if k in g},
                }
            )
    return rows


class Holding(StreamNvml):
    """The recorded bf16 GEMM loop of an H200, every pipe read, in a loop for the GPU's counters; the processes, the
    GPU's UUID and the driver as that H200 answered with one process computing and one holding 20 GiB idle."""

    RECORDED_CALLS = (
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetProcessUtilization",
        "nvmlDeviceGetUUID",
        "nvmlSystemGetDriverVersion",
    )

    def __init__(self) -> None:
        super().__init__(stream_rows())
        self.recorded = FakeNvml(json.loads(RECORDED.read_text())["raw"]["nvml"])

    def call(self, fn: str, index: int | None = None, *args: Any) -> Any:
        if fn in self.RECORDED_CALLS:
            return self.recorded.call(fn, index)
        if fn == "nvmlDeviceGetUtilizationRates" and self.i >= len(self.rows) - 1:
            self.i = -1
        return super().call(fn, index, *args)


def replayed_exporter(seconds: int = 12) -> Any:
    """The exporter fed `seconds` judged seconds of the loop, then as many again `IDLE_HELD_FOR_S` later (the samples'
    clock ending now, so that the window's shares are current at a scrape), its check run once on the recorded
    machine; opened, not serving (`serve()` serves it)."""
    from gputriage.api.check import check
    from gputriage.diagnosis.idle_held import judge_live
    from gputriage.diagnosis.run.live import live_labels
    from gputriage.diagnosis.run.live_regimes import LiveRegimes
    from gputriage.exporter import Exporter
    from gputriage.report.prometheus import families
    from gputriage.sampling.live import LAST_S

    ex = Exporter(
        label=live_labels,
        render=families,
        check=lambda: check(RECORDED),
        port=0,
        period_s=0.5,
        window_s=3600,  # the shares stay current however long a loaded machine takes to scrape them
        check_every_s=0,
        nvml=Holding(),
        host=FakeHost(HOLDERS / "k8s_node"),
        held=judge_live,
        regimes=lambda: LiveRegimes(window_s=LAST_S),
        price_per_gpu_hour=PRICE_PER_GPU_HOUR,
    ).open()
    assert ex.sampler is not None
    t0 = time.time() - IDLE_HELD_FOR_S - 2 * seconds
    for start in (t0, t0 + IDLE_HELD_FOR_S):
        for k in range(seconds):
            for half in (0.0, 0.5):  # two samples a second, as at --period 0.5
                s = ex.sampler.sample_once()
                ex.sampler.recent.append(msgspec.structs.replace(s, t_s=start + k + half))
            ex.judge_once()
    ex.check_once()
    return ex


SERIES = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:\\.|[^"\\])*)"')


def served(text: str) -> tuple[dict[str, str], dict[str, list[dict[str, str]]]]:
    """A scrape as Prometheus stores it: each TYPE line's name and type, and each series name's label sets (names
    exactly as written: prometheus-client's parser would add `_total` to a counter's series)."""
    types: dict[str, str] = {}
    series: dict[str, list[dict[str, str]]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            m = SERIES.match(line)
            assert m is not None, line
            series.setdefault(m.group(1), []).append(dict(LABEL.findall(m.group(2) or "")))
    return types, series
