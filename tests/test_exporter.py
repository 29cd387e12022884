"""`gputriage exporter`: dcgm-exporter's names, units and labels for the counters both read, gputriage's
verdicts beside them, 127.0.0.1 by default, scrapes that never call NVML — and a real Prometheus server
(Debian's) scraping it, queried through its HTTP API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from gputriage.testing.stream_nvml import StreamNvml

pytest.importorskip("prometheus_client")

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
SCENARIOS = json.loads((FIXTURES / "scenario_samples.json").read_text())
GT = [sys.executable, "-m", "gputriage"]


class Looping(StreamNvml):
    """The steady part of a recorded 10 Hz bf16 GEMM stream of an H200, replayed in a loop; counts its calls."""

    calls = 0

    def call(self, fn, index=None, *args):
        type(self).calls += 1
        if fn == "nvmlDeviceGetUtilizationRates" and self.i >= len(self.rows) - 1:
            self.i = -1
        return super().call(fn, index, *args)


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


@pytest.fixture
def exporter(make_host):
    from gputriage.api.exporter import start_exporter

    ex = start_exporter(
        port=0,
        period_s=0.1,
        window_s=5,
        check_every_s=0,
        nvml=Looping([r for r in SCENARIOS["healthy_bf16"]["samples"] if r["util"] >= 90]),
        host=make_host(),
    )
    deadline = time.monotonic() + 60  # a judged second, however long a loaded machine takes to judge it
    while not ex.shares(time.time()).get(0) and time.monotonic() < deadline:
        time.sleep(0.1)
    yield ex
    ex.stop()


def test_dcgm_exporters_names_units_and_labels_and_its_own_verdicts(exporter):
    from prometheus_client.parser import text_string_to_metric_families

    assert exporter.listen == "127.0.0.1" and exporter.url.startswith("http://127.0.0.1:")
    fams = {f.name: f for f in text_string_to_metric_families(_scrape(exporter.url))}
    util = fams["DCGM_FI_DEV_GPU_UTIL"].samples[0]
    assert set(util.labels) == {
        "gpu",
        "UUID",
        "device",
        "modelName",
        "Hostname",
        "pci_bus_id",
        "DCGM_FI_DRIVER_VERSION",
    }
    assert util.labels["gpu"] == "0" and util.labels["device"] == "nvidia0"
    assert util.labels["modelName"] == "NVIDIA H200"
    assert 0 <= util.value <= 100  # %
    sm = fams["DCGM_FI_PROF_SM_ACTIVE"].samples[0].value
    assert 0.5 < sm <= 1.0  # a ratio: bf16 GEMMs keep the SMs busy
    assert 0 < fams["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"].samples[0].value <= 1.0
    assert 300 < fams["DCGM_FI_DEV_POWER_USAGE"].samples[0].value <= 700  # W
    assert 1000 < fams["DCGM_FI_DEV_SM_CLOCK"].samples[0].value <= 2000  # MHz
    used = fams["DCGM_FI_DEV_FB_USED"].samples[0].value
    free = fams["DCGM_FI_DEV_FB_FREE"].samples[0].value
    assert used + free == pytest.approx(150754820096 / 2**20, abs=2)  # MiB
    current = list(fams["gputriage_bottleneck"].samples)
    assert len(current) == 1 and current[0].labels["bottleneck"] == "compute_bound"
    shares = {s.labels["bottleneck"]: s.value for s in fams["gputriage_bottleneck_share"].samples}
    assert shares["compute_bound"] > 0.5 and sum(shares.values()) == pytest.approx(1.0, abs=0.01)


def test_a_scrape_never_calls_nvml(exporter):
    exporter.sampler.stop()  # nothing reads the GPU any more
    before = Looping.calls
    for _ in range(5):
        _scrape(exporter.url)
    assert Looping.calls == before


def test_the_command_binds_127_0_0_1_by_default_and_says_so():
    p = subprocess.Popen(
        GT + ["exporter", "--port", "0", "--check-every", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = p.stderr.readline()
        assert "serving http://127.0.0.1:" in line
        url = line.split()[1]
        stacks = p.stderr.readline()  # where the Python stacks are, or why py-spy cannot give them
        assert stacks.startswith(
            ("python stacks (py-spy) at " + url.replace("/metrics", "/stacks"), "python stacks (py-spy) none: ")
        )
        text = _scrape(url)
        assert "gputriage_gpus" in text and "gputriage_pyspy_available" in text
    finally:
        p.terminate()
        p.wait(timeout=30)
    assert p.returncode == 0
    r = subprocess.run(GT + ["exporter", "--help"], capture_output=True, text=True)
    said = " ".join(r.stdout.split()).replace("- ", "-")  # the help as one line, a word broken at its hyphen joined
    assert "127.0.0.1" in r.stdout and "dcgm-exporter binds every interface" in said


def test_a_real_prometheus_scrapes_it(exporter, tmp_path):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        assert os.environ.get("GPUTRIAGE_REQUIRE_PROMETHEUS") != "1", "Debian's prometheus is not installed"
        pytest.skip("prometheus is not installed (CI installs Debian's)")
    from serving import free_port

    port = free_port()
    target = exporter.url.split("//")[1].split("/")[0]
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: gputriage\n    static_configs:\n      - targets: ['{target}']\n"
    )
    p = subprocess.Popen(
        [
            prometheus,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "prometheus.log", "w"),
    )

    def query(q: str) -> list:
        url = f"http://127.0.0.1:{port}/api/v1/query?query={urllib.parse.quote(q)}"
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read())["data"]["result"]

    try:
        deadline = time.monotonic() + 60
        result: list = []
        while time.monotonic() < deadline:
            try:
                result = query("DCGM_FI_PROF_SM_ACTIVE")
                if result:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert result, (tmp_path / "prometheus.log").read_text()[-2000:]
        assert result[0]["metric"]["modelName"] == "NVIDIA H200" and result[0]["metric"]["job"] == "gputriage"
        assert 0.5 < float(result[0]["value"][1]) <= 1.0
        assert query("up")[0]["value"][1] == "1"
        top = query("gputriage_bottleneck == 1")
        assert top and top[0]["metric"]["bottleneck"] == "compute_bound"
        # a rule a dashboard would use, on dcgm-exporter's name: the mean SM activity over the GPUs
        assert 0.5 < float(query("avg(DCGM_FI_PROF_SM_ACTIVE)")[0]["value"][1]) <= 1.0
    finally:
        p.terminate()
        p.wait(timeout=20)


def test_a_real_h200_scrape_under_load_has_dcgm_exporters_names_and_units():
    """Scraped from `gputriage exporter` on an H200 while `transformers serve` answered a load test: every
    counter the issue lists under dcgm-exporter's name, in its unit (MiB, W, MHz, ratios for the PROF fields),
    the memory adding up to the GPU's 143,771 MiB that nvidia-smi reported, the server's process and VRAM."""
    from prometheus_client.parser import text_string_to_metric_families

    text = (FIXTURES / "exporter_metrics_under_load.txt").read_text()
    values = {s.name: s for f in text_string_to_metric_families(text) for s in f.samples}
    for name in (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_SM_OCCUPANCY",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_XID_ERRORS",
    ):
        assert values[name].labels["modelName"] == "NVIDIA H200", name
    assert values["DCGM_FI_DEV_FB_USED"].value + values["DCGM_FI_DEV_FB_FREE"].value == 143771  # MiB
    assert all(0 <= values[n].value <= 1 for n in ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"))
    assert 60 < values["DCGM_FI_DEV_POWER_USAGE"].value < 700 and values["DCGM_FI_DEV_SM_CLOCK"].value == 1980
    proc = values["gputriage_gpu_process_memory_bytes"]
    assert proc.value / 2**20 <= values["DCGM_FI_DEV_FB_USED"].value  # the server's share of what is used
    shares = [
        s.value
        for f in text_string_to_metric_families(text)
        if f.name == "gputriage_bottleneck_share"
        for s in f.samples
    ]
    assert sum(shares) == pytest.approx(1.0, abs=0.01)


def test_a_python_bound_server_is_told_from_a_starved_input_by_its_processes_cpu():
    """The H200 readings of `transformers serve` at concurrency 1 (GPU-Util 14%, SM activity 3.1%) with and
    without the CPU of the process on the GPU (100% of a core, one thread at 97%, nothing read): without it
    the exporter could only guess the input; with it, the host cannot issue work fast enough."""
    from gputriage.diagnosis.run.classify import label
    from gputriage.model.bottleneck import Bottleneck as B
    from gputriage.model.run import GpuStatic
    from gputriage.model.window import WindowMetrics

    step = json.loads((FIXTURES / "load_transformers_serve_sweep.json").read_text())["steps"][0]
    g, p = step["gpus"][0], step["server_process"]
    gpu = GpuStatic(memory_total_bytes=int(g["total_bytes"]))
    bare = WindowMetrics(
        t0_s=0.0, t1_s=1.0, util_pct=g["util_pct"], sm_active_pct=g["sm_active_pct"], used_bytes=g["used_max_bytes"]
    )
    assert label(bare, gpu)[0] == B.input_starved
    told = msgspec_replace(
        bare, workload_cpu_pct=p["cpu_pct"], top_thread_pct=p["top_thread_pct"], read_mb_per_s=0.0, job_gpu_processes=1
    )
    verdict, others = label(told, gpu)
    assert verdict == B.launch_bound and B.input_starved in others


def msgspec_replace(m, **kw):
    import msgspec

    return msgspec.structs.replace(m, **kw)


def test_the_cpu_of_the_processes_on_a_gpu_is_read_between_two_calls(tmp_path):
    """A process spinning one thread and one asleep, read twice: the second time once the spinner has used 0.3 s
    of CPU, however long a loaded machine takes to give it that (the test asks for a clear difference, not for
    any share of a core)."""
    import psutil

    from gputriage.backends.process_cpu import ProcessCpuReader

    spin = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nprint('go', flush=True)\nt = time.time()\nwhile time.time() - t < 30: pass",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    sleep = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert spin.stdout is not None and spin.stdout.readline().strip() == "go"  # spinning from here
        busy, idle = ProcessCpuReader(), ProcessCpuReader()
        assert busy.read([spin.pid]) is None and idle.read([sleep.pid]) is None  # a baseline first
        spinner, deadline = psutil.Process(spin.pid), time.monotonic() + 60
        start = sum(spinner.cpu_times()[:2])
        while sum(spinner.cpu_times()[:2]) - start < 0.3 and time.monotonic() < deadline:
            time.sleep(0.02)
        b, i = busy.read([spin.pid]), idle.read([sleep.pid])
        assert b is not None and i is not None and b.processes == i.processes == 1
        assert b.cpu_pct > 10 * i.cpu_pct and i.cpu_pct < 5 and b.top_thread_pct >= 0.8 * b.cpu_pct  # one thread
        assert b.read_mb_per_s is not None and b.read_mb_per_s < 1
        assert busy.read([999_999_999]) is None  # a pid that does not exist is left out
    finally:
        spin.kill()
        sleep.kill()


def test_nvlink_traffic_is_exported_under_dcgm_exporters_names_in_bytes_per_second():
    from gputriage.model.sample import GpuSample
    from gputriage.report.prometheus import GAUGES

    linked = {
        name: value(GpuSample(index=0, nvlink_tx_mib_per_s=1000.0, nvlink_rx_mib_per_s=500.0))
        for name, _, value in GAUGES
    }
    assert linked["DCGM_FI_PROF_NVLINK_TX_BYTES"] == 1000 * 2**20
    assert linked["DCGM_FI_PROF_NVLINK_RX_BYTES"] == 500 * 2**20
    alone = {name: value(GpuSample(index=0)) for name, _, value in GAUGES}
    assert alone["DCGM_FI_PROF_NVLINK_TX_BYTES"] is None  # a GPU whose links are not counted: left out


def test_the_non_tensor_math_pipes_are_published_as_dcgm_exporters_ratios():
    from gputriage.model.sample import GpuSample
    from gputriage.report.prometheus import GAUGES

    g = GpuSample(index=0, fp64_active_pct=0.5, fp32_active_pct=76.7, sm_active_pct=96.8, pcie_tx_mib_per_s=2.0)
    got = {name: read(g) for name, _, read in GAUGES}
    assert got["DCGM_FI_PROF_PIPE_FP32_ACTIVE"] == pytest.approx(0.767)
    assert got["DCGM_FI_PROF_PIPE_FP64_ACTIVE"] == pytest.approx(0.005)
    assert got["DCGM_FI_PROF_PIPE_FP16_ACTIVE"] is None  # not given: left out of the scrape
    assert got["DCGM_FI_PROF_PCIE_TX_BYTES"] == 2 * 2**20
