"""Framework rules on built evidence: CPU builds, CUDA newer than the driver, missing arch."""

from __future__ import annotations

from gputriage.diagnosis.check import evaluate
from gputriage.diagnosis.check.rules.torch_arch_missing import supported
from gputriage.model.fact import Fact
from gputriage.model.finding import Severity
from gputriage.model.snapshot import Snapshot


def snap(**facts) -> Snapshot:
    base = {
        "gpu.count": 1,
        "gpu.0.name": "NVIDIA H200",
        "gpu.0.compute_capability": "9.0",
        "driver.cuda_version": "12.4",
        "torch.version": "2.5.0",
        "torch.cuda.build_version": "12.4",
        "torch.cuda.available": True,
        "torch.cuda.arch_list": ["sm_80", "sm_90"],
    }
    base.update(facts)
    return Snapshot(facts=tuple(Fact(k.replace("__", "."), v, "test") for k, v in base.items()), taken_at=0)


def found(s: Snapshot) -> dict[str, Severity]:
    return {f.id: f.severity for f in evaluate(s)}


def test_consistent_stack_is_quiet():
    assert not {k for k, v in found(snap()).items() if v >= Severity.warn}


def test_cpu_only_build_on_a_gpu_machine():
    assert found(snap(**{"torch.cuda.build_version": None}))["torch.cpu_build"] == Severity.critical


def test_unavailable_cuda():
    assert found(snap(**{"torch.cuda.available": False}))["torch.cuda_unavailable"] == Severity.critical


def test_build_newer_than_driver():
    assert found(snap(**{"torch.cuda.build_version": "13.0"}))["torch.cuda_newer_than_driver"] == Severity.critical
    assert found(snap(**{"torch.cuda.build_version": "12.6"}))["torch.cuda_newer_than_driver"] == Severity.info


def test_missing_arch_for_a_bf16_capable_gpu():
    old = snap(**{"torch.cuda.arch_list": ["sm_60", "sm_70", "sm_75"]})
    f = [x for x in evaluate(old) if x.id == "torch.arch_missing"]
    assert f and f[0].severity == Severity.critical and f[0].evidence["bf16_capable"] is True


def test_arch_matching():
    assert supported("8.6", ["sm_80"])  # same-major SASS runs
    assert not supported("9.0", ["sm_80", "sm_86"])
    assert supported("9.0", ["sm_80", "compute_80"])  # PTX JIT
    assert not supported("8.0", ["sm_86"])
