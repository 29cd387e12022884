"""The data-parallel loop every example of this folder shares: an MLP in bf16 under DistributedDataParallel, its
batches from a DataLoader, one optimizer step per batch reported with `gputriage.step()`, every rank stopping at the
same step. One rank may carry a planted cause (`Plant`): a loader that sleeps, host computation, a busy process on
its core, a hang before an all-reduce.

Run an example with a launcher, on GPUs with NCCL or on CPU cores with gloo (`--backend`, by default NCCL where CUDA
is, else gloo):
    torchrun --nproc_per_node 2 slow_loader.py
    torchrun --nproc_per_node 2 slow_loader.py --backend gloo --seconds 10
NCCL's NVLink SHARP (NVLS) is kept off (NCCL_NVLS_ENABLE=0): a lent machine's fabric may not give it.
"""

from __future__ import annotations

import argparse
import atexit
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Optional

import torch
import torch.distributed as dist

try:  # the steps, read by `gputriage run` (steps/s, each rank's step time)
    from gputriage import step as report_step
except ImportError:  # run without gputriage installed
    report_step = None

# sizes by device: (dim, layers, batch); on CPU small enough for a test on two cores
SIZES = {"healthy": {"cuda": (4096, 8, 8192), "cpu": (256, 4, 64)}}


@dataclass
class Plant:
    """What one rank does besides the loop: `kind` is loader, compute, hog or hang; `seconds` how much."""

    kind: str = ""
    seconds: float = 0.05
    rank: int = 1


def options(doc: str, plant: Plant, sizes: dict[str, tuple[int, int, int]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    p.add_argument(
        "--device",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="where the model runs (auto: CUDA with NCCL, else the CPU); gloo on CUDA shares one GPU between ranks",
    )
    p.add_argument("--seconds", type=float, default=20.0, help="how long the steady loop runs")
    p.add_argument("--dim", type=int, default=0, help="the layers' width (0: the example's, by device)")
    p.add_argument("--layers", type=int, default=0)
    p.add_argument("--batch", type=int, default=0)
    p.add_argument("--rank", type=int, default=plant.rank, help="the rank that carries the planted cause")
    p.add_argument("--plant-s", type=float, default=plant.seconds, help="seconds of the planted cause")
    p.add_argument("--fixed", action="store_true", help="no planted cause")
    p.add_argument("--pace-s", type=float, default=0.0, help="every rank's loader takes this long per batch")
    args = p.parse_args()
    if args.backend == "auto":
        args.backend = "nccl" if torch.cuda.is_available() and args.device != "cpu" else "gloo"
    if args.device == "auto":
        args.device = "cuda" if args.backend == "nccl" else "cpu"
    dim, layers, batch = sizes[args.device]
    args.dim, args.layers, args.batch = args.dim or dim, args.layers or layers, args.batch or batch
    return args


class Batches(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Random batches, each `pace_s` to read (every rank alike); on the planted rank of a slow loader, `sleep_s`
    more."""

    def __init__(self, batch: int, dim: int, pace_s: float, sleep_s: float) -> None:
        self.batch, self.dim, self.pace_s, self.sleep_s = batch, dim, pace_s, sleep_s

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, i: int) -> torch.Tensor:
        if self.pace_s:
            time.sleep(self.pace_s)  # every rank: the input's own pace (a CPU test stays light beside others)
        if self.sleep_s:
            time.sleep(self.sleep_s)  # the planted cause of slow_loader.py: this rank's loader reads slowly
        return torch.randn(self.batch, self.dim)


def host_compute(seconds: float) -> int:
    """Python work on the main thread for `seconds` (a tokenizer, a metric computed in Python)."""
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += sum(i * i for i in range(200))  # the planted cause of host_compute.py: Python on this rank's thread
    return n


def hog_core(core: int) -> None:
    """A busy process (not Python: no rank of the job) pinned to `core`, ended with this process."""
    hog = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    os.sched_setaffinity(hog.pid, {core})
    atexit.register(hog.kill)


def pin(rank_local: int) -> int:
    """Pin this rank to one core of its own (its local rank's); the core."""
    cores = sorted(os.sched_getaffinity(0))
    core = cores[rank_local % len(cores)]
    os.sched_setaffinity(0, {core})
    return core


def main(doc: str, plant: Plant, sizes: Optional[dict[str, tuple[int, int, int]]] = None) -> None:
    args = options(doc, plant, sizes or SIZES["healthy"])
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    dist.init_process_group(args.backend)
    rank, local = dist.get_rank(), int(os.environ.get("LOCAL_RANK", "0"))
    planted = "" if args.fixed or rank != args.rank else plant.kind
    gpu = local % max(1, torch.cuda.device_count())  # gloo on CUDA: ranks may share a GPU (NCCL refuses that)
    device = torch.device("cuda", gpu) if args.device == "cuda" else torch.device("cpu")
    if args.device == "cuda":
        torch.cuda.set_device(gpu)
    else:
        torch.set_num_threads(1)
        if plant.kind == "hog":  # every rank on a core of its own; a busy process shares the planted rank's
            core = pin(local)
            if planted:
                hog_core(core)
    layers = [torch.nn.Linear(args.dim, args.dim, bias=False) for _ in range(args.layers)]
    model = torch.nn.Sequential(*layers).to(device=device, dtype=torch.bfloat16)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu] if args.device == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    sleep_s = args.plant_s if planted == "loader" else 0.0
    loader = torch.utils.data.DataLoader(Batches(args.batch, args.dim, args.pace_s, sleep_s), batch_size=None)
    stop = torch.zeros(1, device=device)
    step, t0 = 0, time.perf_counter()
    for x in loader:
        x = x.to(device, torch.bfloat16, non_blocking=True)
        ddp(x).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if planted == "compute":
            host_compute(args.plant_s)
        if report_step is not None:
            report_step(samples=args.batch)
        step += 1
        if step % 10 == 0:  # every rank stops at the same step: one all-reduce every 10 steps
            if planted == "hang" and step == 20:
                time.sleep(args.plant_s)  # the planted cause of hang.py: this rank stalls before the all-reduce
            stop.fill_(float(time.perf_counter() - t0 > args.seconds))
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item():
                break
    if rank == 0:
        print(f"throughput: {step * args.batch * dist.get_world_size() / (time.perf_counter() - t0):.1f} samples/s")
    dist.destroy_process_group()
