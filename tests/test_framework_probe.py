"""The framework facts of `check`: torch's version and CUDA build read from its install without importing it;
whether it can use CUDA from a child, cached by the torch build, the driver and the visible devices. A child
that outlasts the snapshot is not waited for: it fills the cache for the next check, and its facts say so."""

from __future__ import annotations

import textwrap
import time

import pytest

from gputriage.backends import cache
from gputriage.backends.host import Host
from gputriage.backends.torch_install import build
from gputriage.collect import framework
from gputriage.model.reading import Unavailable

VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.5.1+cu124'
debug = False
cuda: Optional[str] = '12.4'
git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'
hip: Optional[str] = None
"""
# a stand-in for the torch probe: answers when the test says so (never on a clock), caching as the real one does
SLOW_PROBE = """
import json, os, sys, time
from gputriage.backends import cache
go = os.environ["GPUTRIAGE_TEST_GO"]
while not os.path.exists(go):
    time.sleep(0.02)
info = {"installed": True, "version": "2.5.1+cu124", "cuda_build": "12.4", "available": True,
        "arch_list": ["sm_90"], "device_count": 1}
options = dict(zip(sys.argv[1::2], sys.argv[2::2]))
cache.write(options["--cache"], info | {"key": options["--key"]})
print(json.dumps(info), flush=True)
"""


def test_the_build_is_read_from_the_install_without_importing_it(tmp_path):
    (tmp_path / "version.py").write_text(VERSION_PY)
    assert build(str(tmp_path)) == {"version": "2.5.1+cu124", "cuda_build": "12.4", "hip_build": None}
    (tmp_path / "version.py").write_text("__version__ = compute()\n")  # nothing to read without running it
    assert build(str(tmp_path)) is None
    assert build(str(tmp_path / "absent")) is None


@pytest.fixture
def slow_probe(tmp_path, monkeypatch):
    (tmp_path / "slow_torch_probe.py").write_text(textwrap.dedent(SLOW_PROBE))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("GPUTRIAGE_TEST_GO", str(tmp_path / "go"))
    monkeypatch.setenv("GPUTRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "go"


def by_name(facts):
    return {f.name: f.value for f in facts}


def test_a_probe_that_outlasts_the_snapshot_fills_the_cache_for_the_next(slow_probe):
    probe = framework.FrameworkProbe(Host(), module="slow_torch_probe")
    if probe.fingerprint is None:
        pytest.skip("torch is not installed here: no build to key the cache by")
    probe.start("570.86.15")
    first = by_name(probe.facts())  # the child is still waiting for its go: not waited for
    available = first["torch.cuda.available"]
    assert isinstance(available, Unavailable) and available.reason == "timeout"
    assert "cached for the next check" in available.detail
    assert isinstance(first["torch.version"], str)  # read from the install meanwhile
    slow_probe.touch()  # the import ends; the child writes the cache on its own
    deadline = time.monotonic() + 120
    while cache.read(framework.CACHE_NAME) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    second = framework.FrameworkProbe(Host(), module="slow_torch_probe")
    second.start("570.86.15")
    assert second.child is None  # answered from the cache: no import
    facts = by_name(second.facts())
    assert facts["torch.cuda.available"] is True and facts["torch.cuda.arch_list"] == ["sm_90"]
    other_driver = framework.FrameworkProbe(Host(), module="slow_torch_probe")
    other_driver.start("580.1")  # another driver: the cached answer does not hold
    assert other_driver.child is not None
    other_driver.cancel()


def test_refresh_waits_for_the_probe(slow_probe):
    probe = framework.FrameworkProbe(Host(), use_cache=False, module="slow_torch_probe")
    if probe.fingerprint is None:
        pytest.skip("torch is not installed here")
    slow_probe.touch()
    probe.start("570.86.15")
    facts = by_name(probe.facts())
    assert facts["torch.cuda.available"] is True and facts["torch.cuda.build_version"] == "12.4"


def test_without_a_gpu_the_version_is_still_known(tmp_path, monkeypatch):
    facts = by_name(framework.unprobed(Unavailable("not_found", "not probed: NVML sees no GPU")))
    installed = build()
    if installed is None:
        assert facts["torch.version"].reason == "not_installed"
    else:  # the check page says the version, not "not installed"
        assert facts["torch.version"] == installed["version"]
        assert facts["torch.cuda.available"].detail == "not probed: NVML sees no GPU"


def test_the_check_page_says_why_a_fact_is_missing():
    from gputriage.report.html_check import _shown

    assert _shown(Unavailable("not_installed", "torch is not importable")) == "not installed"
    assert _shown(Unavailable("not_found", "not probed: NVML sees no GPU")) == "not probed: NVML sees no GPU"
    assert _shown(Unavailable("no_permission", "dmesg: root only")) == "not read: dmesg: root only"
    assert _shown("2.5.1") == "2.5.1"
