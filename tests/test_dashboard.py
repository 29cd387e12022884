"""The Grafana dashboard for the exporter (dashboards/gputriage.json), used as Grafana uses it: every metric its PromQL
queries is one the exporter serves, every series a query selects carries the labels the query filters, groups and
names its legend by, every expression parses (promtool); and a real Prometheus scraping the exporter (its own code,
replayed on recorded facts) fills every panel with one host and one GPU selected, the variables resolved from
Prometheus as Grafana resolves them, and empties every panel for a host it does not know."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest

from exporter_replay import PRICE_PER_GPU_HOUR, replayed_exporter, served
from serving import free_port

ROOT = Path(__file__).parent.parent
DASHBOARD = ROOT / "dashboards" / "gputriage.json"
# Grafana's variables, as a query with every host and GPU selected sends them
VARIABLES = {"$host": ".*", "$gpu": ".*", "$__rate_interval": "1m", "$__interval": "30s", "$__range": "1h"}
REGEX_SPECIAL = set("\\^$*+?.()|[]{}")
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


def with_variables(expr: str, chosen: Mapping[str, str] | None = None) -> str:
    """The expression as Grafana sends it: `chosen` variables (name -> one value) regex-escaped as Grafana escapes a
    single value for Prometheus, the others as their "All" value."""
    for name, value in (chosen or {}).items():
        expr = expr.replace(f"${name}", "".join("\\\\" + c if c in REGEX_SPECIAL else c for c in value))
    for k, v in VARIABLES.items():
        expr = expr.replace(k, v)
    return expr


def targets(dashboard: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(panel title, PromQL, legend format) of every query of every panel."""

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for p in items:
            yield p
            yield from panels(p.get("panels") or [])

    for p in panels(dashboard["panels"]):
        for t in p.get("targets") or []:
            if t.get("expr"):
                yield f"{p['title']} {t.get('refId')}", t["expr"], t.get("legendFormat") or ""


def selectors(expr: str) -> Iterator[tuple[str, set[str]]]:
    """(metric, the labels its matchers filter by) of each selector of an expression."""
    e = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    for m in re.finditer(r"(?<![\w:.])([A-Za-z_:][\w:]*)\s*\{([^}]*)\}", e):
        yield m.group(1), set(re.findall(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)", m.group(2)))


def without_scalars(expr: str) -> str:
    """The expression with each scalar(...) taken out: scalar() drops every label, so what groups or names the result
    says nothing of the series inside it."""
    while (start := expr.find("scalar(")) >= 0:
        depth, end = 0, start + len("scalar")
        for end in range(start + len("scalar"), len(expr)):
            depth += {"(": 1, ")": -1}.get(expr[end], 0)
            if depth == 0:
                break
        expr = expr[:start] + "1" + expr[end + 1 :]
    return expr


def label_names(expr: str, legend: str = "") -> set[str]:
    """The labels an expression groups or matches by (by, without, on, ignoring, group_left, group_right) and names
    in its legend: labels every series it selects outside a scalar() must carry."""
    names = set()
    for grouped in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", expr):
        names |= {n.strip() for n in grouped.split(",") if n.strip()}
    return names | set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))


DASH = json.loads(DASHBOARD.read_text())
QUERIES = list(expressions(DASH))
TARGETS = list(targets(DASH))
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


@pytest.fixture(scope="module")
def exporter():
    """The exporter's own code replayed on recorded facts (no thread, no GPU), serving what it judged."""
    ex = replayed_exporter().serve()
    yield ex
    ex.stop()


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def test_the_labels_a_query_uses_are_read_out_of_it():
    expr = (
        'sum by (Hostname, gpu) (increase(x_total{Hostname=~"$host", gpu!="a{b}"}[1m])) and on (pid) y'
        ' * scalar(z{c="d"})'
    )
    assert list(selectors(expr)) == [("x_total", {"Hostname", "gpu"}), ("z", {"c"})]
    assert without_scalars(expr).endswith("y * 1") and metric_names(without_scalars(expr)) == {"x_total", "y"}
    assert label_names(expr, "{{Hostname}} gpu {{ gpu }} {{pod}}") == {"Hostname", "gpu", "pid", "pod"}


def test_every_metric_the_dashboard_queries_is_served_with_series(exporter):
    types, series = served(_scrape(exporter.url))
    missing = [m for m in METRICS if m not in types]
    assert not missing, f"the dashboard queries metrics the exporter does not serve: {missing}"
    empty = [m for m in METRICS if not series.get(m)]
    assert not empty, f"served with no series on a GPU with processes, a check and a price: {empty}"
    pods = {s["pod"] for s in series["gputriage_gpu_process_idle_held"]}
    assert pods == {"llm-pretrain-0", "jupyter-alice-0"}


def test_every_series_a_query_selects_carries_the_labels_it_filters_groups_and_names_by(exporter):
    """A label a series lacks empties the panel once a host is picked (`{Hostname=~"vm"}` matches no series without
    Hostname) or blanks its legend: every label a query uses must be on every series of every metric it selects."""
    _, series = served(_scrape(exporter.url))
    lacking = []
    for where, expr, legend in TARGETS:
        wanted = {m: label_names(expr, legend) for m in metric_names(without_scalars(expr))}
        for metric, filtered in selectors(expr):
            wanted[metric] = wanted.get(metric, set()) | filtered
        for metric, labels in wanted.items():
            for s in series.get(metric, []):
                if not labels <= set(s):
                    lacking.append((where, metric, sorted(labels - set(s))))
    assert not lacking, lacking
    for v in DASH["templating"]["list"]:  # each variable's values: label_values(selector, label)
        if v["type"] == "query":
            m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", v["query"]["query"])
            assert m is not None, v
            for metric, filtered in selectors(m.group(1) if "{" in m.group(1) else m.group(1) + "{}"):
                assert all(filtered | {m.group(2)} <= set(s) for s in series[metric]), (v["name"], metric)


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


class Prometheus:
    """Debian's Prometheus scraping `target` every second, asked through its HTTP API."""

    def __init__(self, binary: str, target: str, folder: Path) -> None:
        self.port, self.log = free_port(), folder / "prometheus.log"
        (folder / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n  - job_name: gputriage\n    static_configs:\n      - targets: ['{target}']\n"
        )
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("w"),
        )

    def get(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:  # a query Prometheus refuses: its error, for the assertion
            return json.loads(exc.read())

    def query(self, q: str) -> list[dict[str, Any]]:
        answer = self.get("query", query=q)
        assert answer["status"] == "success", (q, answer)
        return answer["data"]["result"]

    def label_values(self, query: str, chosen: Mapping[str, str]) -> list[str]:
        """A variable's values as Grafana asks them: `label_values(selector, label)`, earlier variables put in."""
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", query)
        assert m is not None, query
        answer = self.get(f"label/{m.group(2)}/values", **{"match[]": with_variables(m.group(1), chosen)})
        return sorted(answer["data"])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def test_a_real_prometheus_fills_every_panel_with_a_host_selected(exporter, tmp_path):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        assert os.environ.get("GPUTRIAGE_REQUIRE_PROMETHEUS") != "1", "Debian's prometheus is not installed"
        pytest.skip("prometheus is not installed (CI installs Debian's)")
    p = Prometheus(prometheus, exporter.url.split("//")[1].split("/")[0], tmp_path)
    try:
        chosen: dict[str, str] = {}
        deadline = time.monotonic() + 90  # Prometheus's start and two scrapes (increase() needs two), however loaded
        empty = [where for where, _, _ in TARGETS]
        while empty and time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                for v in DASH["templating"]["list"]:  # Host, then GPU among that host's: the first of each
                    if v["type"] == "query":
                        values = p.label_values(v["query"]["query"], chosen)
                        if values:
                            chosen[v["name"]] = values[0]
                if len(chosen) < 2:
                    continue
                empty = [where for where, q, _ in TARGETS if not p.query(with_variables(q, chosen))]
            except OSError:  # not listening yet
                pass
        assert chosen.keys() == {"host", "gpu"} and chosen["host"] and chosen["gpu"] == "0", chosen
        assert not empty, (f"panels with no data for host {chosen['host']!r}: {empty}", p.log.read_text()[-2000:])
        for where, q, legend in TARGETS:  # each legend's labels are in what the panel gets
            wanted = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))
            for r in p.query(with_variables(q, chosen)):
                assert wanted <= set(r["metric"]), (where, legend, r["metric"])
        other = {**chosen, "host": "a.host-not-scraped"}
        assert not [where for where, q, _ in TARGETS if p.query(with_variables(q, other))]  # every panel filters
        # what the panels show, from the scraped series: the idle holder is 20 GiB in the notebooks namespace
        held = p.query('gputriage_gpu_process_memory_bytes{namespace="notebooks"}')
        assert [(r["metric"]["pod"], float(r["value"][1])) for r in held] == [("jupyter-alice-0", 22114467840.0)]
        assert float(p.query("max(gputriage_price_per_gpu_hour)")[0]["value"][1]) == PRICE_PER_GPU_HOUR
        (replays,) = p.query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER")  # dcgm-exporter's name, as its dashboards select it
        assert replays["metric"]["Hostname"] == chosen["host"]
        assert not p.query('{__name__="DCGM_FI_DEV_PCIE_REPLAY_COUNTER_total"}')
    finally:
        p.stop()
