"""A PyTorch DataLoader's worker processes among the workload's, recognised by the name each gives itself: torch's
worker loop (`torch/utils/data/_utils/worker.py`, `_worker_loop`) calls `torch.multiprocessing._set_thread_name(
"pt_data_worker")` on its main thread, which is the process's name in /proc/PID/comm (torch 2.4 and later:
pytorch/pytorch#128448; an older torch's workers keep their parent's name and are not counted). Per reading: how many
run, their CPU together and per worker, and the cores the workload may use (affinity and cgroup quota)."""

from __future__ import annotations

from gputriage.backends.process_tree import ProcessDetail

WORKER_NAME = "pt_data_worker"


def workers(seen: dict[int, ProcessDetail]) -> list[int]:
    """The DataLoader workers among the processes read."""
    return [pid for pid, d in seen.items() if d.name == WORKER_NAME]


def loader_fields(prev: dict[int, ProcessDetail], seen: dict[int, ProcessDetail], dt_s: float) -> dict[str, float]:
    """The workers' count, and (those read at both ends) their CPU together and per worker, % of one core; nothing
    where the workload runs none."""
    pids = workers(seen)
    if not pids:
        return {}
    out: dict[str, float] = {"loader_workers": float(len(pids))}
    both = [p for p in pids if p in prev]
    if both and dt_s > 0:
        per = [max(0.0, seen[p].cpu_s - prev[p].cpu_s) / dt_s * 100 for p in both]
        out["loader_cpu_pct"] = round(sum(per), 1)
        out["loader_worker_cpu_pct"] = round(sum(per) / len(per), 1)
    return out
