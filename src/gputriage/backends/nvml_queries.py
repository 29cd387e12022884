"""What the sampler and the collectors ask of NVML through a backend: the compute processes and their
memory, each process's SM use, how often the driver refreshes GPU-Util."""

from __future__ import annotations

from typing import Any

from gputriage.backends.nvml import NvmlBackend
from gputriage.model.reading import Unavailable

NVML_VALUE_NOT_AVAILABLE_FLOOR = 1 << 62  # usedGpuMemory at or above this: NVML could not tell


def compute_processes(nvml: NvmlBackend, gpus: list[int]) -> dict[int, list[dict[str, Any]]]:
    """{GPU: [{"pid", "used_bytes"}]} of the compute processes NVML lists, for the GPUs it answers for
    (used_bytes None where NVML cannot tell, as in containers without the PID namespace)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for i in gpus:
        listed = nvml.call("nvmlDeviceGetComputeRunningProcesses", i)
        if isinstance(listed, list):
            out[i] = [
                {
                    "pid": int(p["pid"]),
                    "used_bytes": int(u)
                    if (u := p.get("usedGpuMemory")) is not None and int(u) < NVML_VALUE_NOT_AVAILABLE_FLOOR
                    else None,
                }
                for p in listed
            ]
    return out


def process_sm_util(nvml: NvmlBackend, index: int, since_us: int) -> tuple[dict[int, float], int] | None:
    """({pid: mean SM utilization % of its samples newer than `since_us`}, the newest sample's timestamp):
    the share of time each process's kernels ran, as GPU-Util is for the whole GPU. ({}, since_us) when
    no process ran a kernel since; None where the GPU or driver does not give it."""
    answer = nvml.process_samples(index, since_us)
    if isinstance(answer, Unavailable):
        return ({}, since_us) if answer.reason == "not_found" else None
    if not isinstance(answer, list):
        return None
    per_pid: dict[int, list[float]] = {}
    newest = since_us
    for x in answer:
        if isinstance(x, dict) and isinstance(x.get("pid"), int) and isinstance(x.get("smUtil"), (int, float)):
            per_pid.setdefault(x["pid"], []).append(float(x["smUtil"]))
            newest = max(newest, int(x.get("timeStamp") or 0))
    return {pid: round(sum(v) / len(v), 1) for pid, v in per_pid.items()}, newest


NVML_GPU_UTILIZATION_SAMPLES = 1


def util_refresh_s(nvml: NvmlBackend, index: int) -> float | None:
    """How often the driver refreshes a GPU's GPU-Util (the median spacing of the samples it keeps;
    200 ms on an H200); None when it does not say."""
    answer = nvml.call("nvmlDeviceGetSamples", index, NVML_GPU_UTILIZATION_SAMPLES, 0)
    if isinstance(answer, Unavailable) or not isinstance(answer, list) or len(answer) != 2:
        return None
    stamps = sorted(int(x["timeStamp"]) for x in answer[1] if isinstance(x, dict) and x.get("timeStamp"))
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]) if b > a)
    if len(gaps) < 3:
        return None
    return gaps[len(gaps) // 2] / 1e6  # microseconds
