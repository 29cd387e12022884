"""The spec database: every GPU finds its datasheet by PCI id, by any name it goes by, by family, or not at all."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gputriage import api
from gputriage.model.specs import GIB, all_specs, database, match

TRACES = Path(__file__).parent / "fixtures" / "h200" / "traces"


def test_spec_database_matches_by_pci_id_and_memory():
    assert match("0x2335").name == "NVIDIA H200"
    assert match("0x2335").matched_by == "pci id"
    assert match("0x20b2", 80 * GIB).data["memory_bw_gbs"] == 2039
    assert match(None, None, "NVIDIA H200").data["bf16_tflops"] == 989.4
    assert match("0xffff") is None
    assert match("0x2335").ridge_flop_per_byte("bf16") == pytest.approx(206.1, abs=0.1)


def test_every_entry_is_complete_sourced_dense_and_found_by_its_own_names():
    sources = database()["sources"]
    for s in all_specs():
        d = s.data
        for key in ("memory_gb", "memory_bw_gbs", "sm_count", "family", "names", "compute_capability", "tdp_w"):
            assert d.get(key), (s.name, key)
        assert d["source"] in sources
        if d.get("bf16_tflops") and d.get("tf32_tflops"):  # dense, not sparse: bf16 about twice tf32
            assert d["bf16_tflops"] <= 2.05 * d["tf32_tflops"], s.name
        for n in [s.name, *d["names"]]:
            assert match(None, d["memory_gb"] * GIB, n, d["sm_count"]).name == s.name, n
        for dev in d["pci_device_ids"]:
            assert match(dev, d["memory_gb"] * GIB).name == s.name, dev
    ids = [dev for s in all_specs() for dev in s.data["pci_device_ids"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    "name, memory_bytes, sm_count, expected, how",
    [
        # the names NVML and the profiler give, not the database's own
        ("NVIDIA A100-SXM4-80GB", 85_198_045_184, 108, "NVIDIA A100 SXM4 80GB", "name"),
        ("NVIDIA A100-PCIE-40GB", 42_505_273_344, 108, "NVIDIA A100 PCIe 40GB", "name"),
        ("NVIDIA H100 80GB HBM3", 85_520_809_984, 132, "NVIDIA H100 SXM5 80GB", "name"),
        ("Tesla T4", 15_843_721_216, 40, "NVIDIA T4", "name"),
        ("NVIDIA B200", 191_000_000_000, 148, "NVIDIA B200", "name"),
        # a family name: the SM count, the form factor or the memory picks the part
        ("NVIDIA H100", 85_000_000_000, 114, "NVIDIA H100 PCIe 80GB", "family"),
        ("NVIDIA H100", 85_000_000_000, 132, "NVIDIA H100 SXM5 80GB", "family"),
        ("NVIDIA A100 PCIe", 85_000_000_000, None, "NVIDIA A100 PCIe 80GB", "family"),
        ("NVIDIA A100 SXM", 42_000_000_000, None, "NVIDIA A100 SXM4 40GB", "family"),
        # the longest family named wins: not an H200 for a GH200, not an L4 for an L40S, not an A10 for an A100
        ("NVIDIA GH200 144G HBM3e", None, None, "NVIDIA GH200", "family"),
        ("NVIDIA L40S-48Q", None, None, "NVIDIA L40S", "family"),
        # the GPU's memory its name states, not the memory of a MIG slice
        ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", None, None, "NVIDIA A100 SXM4 40GB", "family"),
        ("NVIDIA A100-PCIE-80GB MIG 3g.40gb", None, None, "NVIDIA A100 PCIe 80GB", "family"),
        # no name that helps: SM count and memory, where they fit one part only
        ("", 150_109_880_320, 132, "NVIDIA H200", "SM count and memory"),
    ],
)
def test_name_variants_and_families_find_their_datasheet(name, memory_bytes, sm_count, expected, how):
    s = match(None, memory_bytes, name, sm_count)
    assert s is not None and (s.name, s.matched_by) == (expected, how)


@pytest.mark.parametrize(
    "name, memory_bytes, sm_count",
    [
        ("NVIDIA A10G", None, None),  # a different part from the A10: no datasheet beats a wrong one
        ("NVIDIA H800", None, None),
        ("NVIDIA GeForce RTX 4080", 17_171_480_576, 76),
        ("", 95 * GIB, 132),  # 132 SMs and 95 GiB: an H100 NVL or a GH200, which is not known
        ("", None, None),
    ],
)
def test_no_guess_where_nothing_fits_or_two_parts_do(name, memory_bytes, sm_count):
    assert match(None, memory_bytes, name, sm_count) is None


def test_a_trace_from_a_renamed_gpu_is_judged_against_its_own_datasheet(tmp_path):
    data = json.loads(gzip.decompress((TRACES / "healthy.json.gz").read_bytes()))
    assert api.analyze_trace([TRACES / "healthy.json.gz"]).ranks[0].spec == "NVIDIA H200"
    data["deviceProperties"][0].update(name="NVIDIA H100 80GB HBM3", totalGlobalMem=85_520_809_984)
    renamed = tmp_path / "h100.json"
    renamed.write_text(json.dumps(data))
    assert api.analyze_trace([renamed]).ranks[0].spec == "NVIDIA H100 SXM5 80GB"
    data["deviceProperties"][0].update(name=7, totalGlobalMem="lots", numSms=None)  # a header not to be trusted
    renamed.write_text(json.dumps(data))
    r = api.analyze_trace([renamed]).ranks[0]
    assert r.gpu is None and r.spec is None
