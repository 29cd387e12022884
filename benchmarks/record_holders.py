"""Record who holds each GPU, as NVML and /proc see it: every compute process (pid, memory used), NVML's
per-process utilization samples over the last seconds, and each process's cgroup, user and command line. The JSON
is a fixture for the tests of the processes' table and the idle-held finding.

    python benchmarks/record_holders.py OUT.json [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pynvml


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError as exc:
        return f"<unreadable: {exc.strerror}>"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out", type=Path)
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    pynvml.nvmlInit()
    since_us = int((time.time() - a.seconds) * 1e6)
    gpus = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        listed = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
        procs = [{"pid": q.pid, "usedGpuMemory": q.usedGpuMemory} for q in listed]
        try:
            samples = [
                {
                    "pid": s.pid,
                    "timeStamp": s.timeStamp,
                    "smUtil": s.smUtil,
                    "memUtil": s.memUtil,
                    "encUtil": s.encUtil,
                    "decUtil": s.decUtil,
                }
                for s in pynvml.nvmlDeviceGetProcessUtilization(h, since_us)
            ]
        except pynvml.NVMLError as exc:
            samples = [{"error": str(exc)}]
        util = pynvml.nvmlDeviceGetUtilizationRates(h)
        gpus.append(
            {
                "index": i,
                "name": pynvml.nvmlDeviceGetName(h),
                "util_gpu": util.gpu,
                "processes": procs,
                "process_utilization": samples,
                "since_us": since_us,
                "read_us": int(time.time() * 1e6),
            }
        )
    host = {}
    for g in gpus:
        for q in g["processes"]:
            pid = q["pid"]
            host[str(pid)] = {
                "cgroup": _read(f"/proc/{pid}/cgroup"),
                "status": _read(f"/proc/{pid}/status")[:2000],
                "cmdline": _read(f"/proc/{pid}/cmdline").replace("\0", " ").strip(),
                "stat": _read(f"/proc/{pid}/stat"),
            }
    a.out.write_text(
        json.dumps(
            {
                "recorded_at": time.time(),
                "driver": pynvml.nvmlSystemGetDriverVersion(),
                "gpus": gpus,
                "procs": host,
                "own_pid": os.getpid(),
            },
            indent=1,
        )
    )
    print(f"wrote {a.out}: {sum(len(g['processes']) for g in gpus)} processes")


if __name__ == "__main__":
    main()
