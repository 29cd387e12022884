"""The Grafana dashboard for the exporter (dashboards/gputriage.json): every metric its PromQL queries is one the
exporter serves, every expression parses (promtool), and a real Prometheus scraping the exporter returns data for
each metric and evaluates each expression."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from gputriage.testing.fake_host import FakeHost
from gputriage.testing.fake_nvml import FakeNvml
from gputriage.testing.stream_nvml import StreamNvml

pytest.importorskip("prometheus_client")

ROOT = Path(__file__).parent.parent
DASHBOARD = ROOT / "dashboards" / "gputriage.json"
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
# Grafana's variables, as a query with every host and GPU selected sends them
VARIABLES = {"$host": ".*", "$gpu": ".*", "$__rate_interval": "1m", "$__interval": "30s", "$__range": "1h"}
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}


def expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every query: each panel's targets (rows' panels too), each variable's query (the
    metric selector inside Grafana's label_values(...))."""

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for p in items:
            yield p
            yield from panels(p.get("panels") or [])

    for p in panels(dashboard["panels"]):
        for t in p.get("targets") or []:
            if t.get("expr"):
                yield f"panel {p['title']!r} {t.get('refId')}", t["expr"]
    for v in dashboard.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") == "query" and isinstance(q, str):
            m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q)
            yield f"variable {v['name']}", m.group(1) if m else q


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers left once strings, label matchers, range
    selectors, grouping label lists and numbers are taken out, that are neither a function or aggregation (a name
    followed by "(") nor a keyword."""
    e = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*", e):
        if e[m.end() :].lstrip().startswith("(") or m.group() in KEYWORDS:
            continue
        names.add(m.group())
    return names


def with_variables(expr: str) -> str:
    for k, v in VARIABLES.items():
        expr = expr.replace(k, v)
    return expr


DASH = json.loads(DASHBOARD.read_text())
QUERIES = list(expressions(DASH))
METRICS = sorted(set().union(*(metric_names(q) for _, q in QUERIES)))


def test_metric_names_are_read_out_of_promql():
    assert metric_names(
        'sum by (Hostname, gpu) (rate(foo_total{a="b{c}", d=~"$x"}[5m])) / on (gpu) '
        "group_left (pod) bar * scalar(max(baz)) > bool 1e3 and qux offset 5m"
    ) == {"foo_total", "bar", "baz", "qux"}
    assert metric_names("time() - max(gputriage_check_timestamp_seconds)") == {"gputriage_check_timestamp_seconds"}


def test_the_dashboard_shows_what_the_issue_asks():
    titles = " | ".join(p["title"] for p in DASH["panels"])
    for wanted in (
        "GPU activity vs GPU-Util",
        "Tensor",
        "bottleneck per GPU over time",
        "Findings",
        "holding a GPU idle",
        "cost",
        "regime changes",
    ):
        assert wanted.lower() in titles.lower(), wanted
    for name in (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gputriage_bottleneck",
        "gputriage_finding",
        "gputriage_gpu_process_idle_held",
        "gputriage_price_per_gpu_hour",
        "gputriage_regime_changes_total",
    ):
        assert name in METRICS, name
    assert all(p["datasource"]["uid"] == "${datasource}" for p in DASH["panels"] if p["type"] != "row")
    ids = [p["id"] for p in DASH["panels"]]
    assert len(ids) == len(set(ids))


def _stream_rows() -> list[dict[str, Any]]:
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
    """A recorded bf16 GEMM loop of an H200, every pipe read, in a loop for the GPU's counters; the processes as
    the H200 answered with one computing and one holding 20 GiB idle."""

    def __init__(self) -> None:
        super().__init__(_stream_rows())
        self.recorded = FakeNvml(json.loads(RECORDED.read_text())["raw"]["nvml"])

    def call(self, fn: str, index: int | None = None, *args: Any) -> Any:
        if fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetProcessUtilization"):
            return self.recorded.call(fn, index)
        if fn == "nvmlDeviceGetUtilizationRates" and self.i >= len(self.rows) - 1:
            self.i = -1
        return super().call(fn, index, *args)


@pytest.fixture(scope="module")
def exporter():
    """The exporter as `gputriage exporter` wires it (its label, regimes and idle-held judge), its check the recorded
    H200's, with a price."""
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
        period_s=0.1,
        window_s=5,
        check_every_s=30,
        nvml=Holding(),
        host=FakeHost(HOLDERS / "k8s_node"),
        held=judge_live,
        regimes=lambda: LiveRegimes(window_s=LAST_S),
        price_per_gpu_hour=3.5,
    ).start()
    deadline = time.monotonic() + 60  # a judged second, a listing of the processes and a check, however loaded
    while time.monotonic() < deadline and not (
        ex.shares(time.time()).get(0) and ex.state().holders and ex.state().checked_s
    ):
        time.sleep(0.1)
    yield ex
    ex.stop()


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def test_every_metric_the_dashboard_queries_is_served_by_the_exporter(exporter):
    from prometheus_client.parser import text_string_to_metric_families

    text = _scrape(exporter.url)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # a counter's family is named without the `_total` its series (what a query selects) carry
    families |= {f"{f.name}_total": f for f in list(families.values()) if f.type == "counter"}
    missing = [m for m in METRICS if m not in families]
    assert not missing, f"the dashboard queries metrics the exporter does not serve: {missing}"
    empty = [m for m in METRICS if not families[m].samples]
    assert not empty, f"served with no series on a GPU with processes, a check and a price: {empty}"
    pods = {s.labels["pod"] for s in families["gputriage_gpu_process_idle_held"].samples}
    assert pods == {"llm-pretrain-0", "jupyter-alice-0"}


def _promtool() -> str | None:
    tool = shutil.which("promtool")
    if tool is None:
        assert os.environ.get("GPUTRIAGE_REQUIRE_PROMETHEUS") != "1", "Debian's prometheus (promtool) is not installed"
    return tool


def test_every_expression_parses(tmp_path):
    promtool = _promtool()
    if promtool is None:
        pytest.skip("promtool is not installed (CI installs Debian's prometheus)")
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}", "expr": with_variables(q)} for i, (_, q) in enumerate(QUERIES)
                ],
            }
        ]
    }
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps(rules))  # YAML is a superset of JSON
    r = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_real_prometheus_returns_data_for_every_metric_the_dashboard_queries(exporter, tmp_path):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        assert os.environ.get("GPUTRIAGE_REQUIRE_PROMETHEUS") != "1", "Debian's prometheus is not installed"
        pytest.skip("prometheus is not installed (CI installs Debian's)")
    sys.path.insert(0, str(Path(__file__).parent))
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

    def query(q: str) -> dict[str, Any]:
        url = f"http://127.0.0.1:{port}/api/v1/query?query={urllib.parse.quote(q)}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:  # a query Prometheus refuses: its error, for the assertion
            return json.loads(exc.read())

    try:
        deadline = time.monotonic() + 60
        missing = METRICS
        while missing and time.monotonic() < deadline:
            try:
                missing = [m for m in METRICS if not query(m)["data"]["result"]]
            except OSError:
                pass
            time.sleep(0.5)
        assert not missing, (missing, (tmp_path / "prometheus.log").read_text()[-2000:])
        for where, q in QUERIES:
            answer = query(with_variables(q))
            assert answer["status"] == "success", (where, q, answer)
        # what the panels show, from the scraped series: the idle holder is 20 GiB in the notebooks namespace
        held = query('gputriage_gpu_process_memory_bytes{namespace="notebooks"}')["data"]["result"]
        assert [(r["metric"]["pod"], float(r["value"][1])) for r in held] == [("jupyter-alice-0", 22114467840.0)]
        assert float(query("max(gputriage_price_per_gpu_hour)")["data"]["result"][0]["value"][1]) == 3.5
    finally:
        p.terminate()
        p.wait(timeout=20)
