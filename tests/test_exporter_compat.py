"""The exporter against dcgm-exporter: every dcgm-exporter field it serves under the name and type dcgm-exporter's
default counters file gives it (a counter with no `_total` added), its label fields on every series, and the
compatibility table of docs/commands/exporter.md saying the same; and the text format as Prometheus reads it."""

from __future__ import annotations

import csv
import re
import urllib.request
from pathlib import Path

import pytest

from exporter_replay import replayed_exporter, served
from gputriage.exporter.exposition import Family, text

ROOT = Path(__file__).parent.parent
# the fields of dcgm-exporter's etc/default-counters.csv that gputriage serves, with their types (source in the file)
DEFAULT_COUNTERS = ROOT / "tests" / "fixtures" / "dcgm_exporter" / "default_counters_served.csv"
DOC = ROOT / "docs" / "commands" / "exporter.md"
# DCGM's profiling fields the default file does not list, served under DCGM's field names
NOT_IN_THE_FILE = {"DCGM_FI_PROF_NVLINK_TX_BYTES": "gauge", "DCGM_FI_PROF_NVLINK_RX_BYTES": "gauge"}


def _default_counters() -> dict[str, tuple[str, str]]:
    """field -> (type, on | commented), as the committed list gives them."""
    rows = csv.DictReader(line for line in DEFAULT_COUNTERS.read_text().splitlines() if not line.startswith("#"))
    return {r["field"]: (r["type"], r["in_file"]) for r in rows}


def _doc_table() -> dict[str, tuple[str, str]]:
    """metric -> (type, its state in dcgm-exporter's default file), from the compatibility table of the docs."""
    section = DOC.read_text().split("### Compatibility with dcgm-exporter", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.fullmatch(r"\| `(DCGM_\w+)` \| (\w+) \| .* \| ([^|]+) \|", line.strip())
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3).strip())
    return rows


@pytest.fixture(scope="module")
def scrape() -> str:
    ex = replayed_exporter().serve()
    try:
        with urllib.request.urlopen(ex.url, timeout=10) as r:
            assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            return r.read().decode()
    finally:
        ex.stop()


def test_dcgm_exporters_fields_are_served_under_its_names_and_types(scrape):
    types, series = served(scrape)
    fields = _default_counters()
    expected = {f: t for f, (t, _) in fields.items() if t != "label"} | NOT_IN_THE_FILE
    dcgm = {name: kind for name, kind in types.items() if name.startswith("DCGM_")}
    assert dcgm == expected  # every field of the list served, each with its type; no DCGM name outside it
    assert not [name for name in series if name.startswith("DCGM_") and name not in dcgm]  # no `_total` or other
    assert types["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"] == "counter" and series["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"]
    assert "DCGM_FI_DEV_PCIE_REPLAY_COUNTER_total" not in scrape
    labels = [f for f, (t, _) in fields.items() if t == "label"]
    assert labels == ["DCGM_FI_DRIVER_VERSION"]
    for name in dcgm:
        for s in series.get(name, []):
            assert {"gpu", "UUID", "device", "modelName", "Hostname", "pci_bus_id", *labels} <= set(s), (name, s)
            assert s["DCGM_FI_DRIVER_VERSION"] == "580.159.04"  # the recorded H200's driver
    unread = {n for n in dcgm if not series.get(n)}
    assert unread == set(NOT_IN_THE_FILE)  # a GPU with no NVLink has no NVLink series; every other field has one


def test_the_docs_compatibility_table_says_what_is_served(scrape):
    types, _ = served(scrape)
    table = _doc_table()
    fields = _default_counters()
    assert {f: (t, "on" if s == "on" else "commented") for f, (t, s) in fields.items()} == {
        f: row for f, row in table.items() if f in fields
    }
    assert {f: t for f, (t, s) in table.items() if s.startswith("not listed")} == NOT_IN_THE_FILE
    assert {f for f, (t, _) in table.items() if t != "label"} == {n for n in types if n.startswith("DCGM_")}


def test_the_list_names_its_source_and_the_file_as_dcgm_exporter_writes_it():
    head = DEFAULT_COUNTERS.read_text()
    assert "github.com/NVIDIA/dcgm-exporter/blob/" in head and "etc/default-counters.csv" in head
    assert all(t in ("gauge", "counter", "label") for t, _ in _default_counters().values())


def test_the_text_format_names_each_series_as_its_family():
    replays = Family(
        name="DCGM_FI_DEV_PCIE_REPLAY_COUNTER", help="Total number of PCIe retries.", type="counter", labels=["gpu"]
    )
    replays.add(["0"], 3)
    own = Family(
        name="gputriage_regime_changes_total",
        help='a "quoted" \\ help\nline',
        type="counter",
        labels=["gpu", "Hostname"],
    )
    own.add(["0", 'a "b"\\c\nd'], 1)
    flat = Family(name="gputriage_gpus", help="GPUs.")
    flat.add([], float("nan"))
    written = text([replays, own, flat]).decode()
    assert written == (
        "# HELP DCGM_FI_DEV_PCIE_REPLAY_COUNTER Total number of PCIe retries.\n"
        "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"
        'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu="0"} 3.0\n'
        '# HELP gputriage_regime_changes_total a "quoted" \\\\ help\\nline\n'
        "# TYPE gputriage_regime_changes_total counter\n"
        'gputriage_regime_changes_total{gpu="0",Hostname="a \\"b\\"\\\\c\\nd"} 1.0\n'
        "# HELP gputriage_gpus GPUs.\n"
        "# TYPE gputriage_gpus gauge\n"
        "gputriage_gpus NaN\n"
    )
    with pytest.raises(ValueError):
        replays.add([], 1)  # one value per label
    with pytest.raises(ValueError):
        Family(name="x", help="", type="summary")
