"""All-reduce bus bandwidth across the visible GPUs: one process per GPU, torch.distributed (NCCL),
message sizes up to >= 1 GiB. Run as a child by `gputriage bench`; prints one JSON line per size.

    python -m gputriage.probes.collectives [--backend nccl|gloo] [--world N] [--max-bytes B]

Bus bandwidth follows nccl-tests: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n, the
figure to compare with the interconnect's bandwidth. gloo on CPU exercises the same code in tests.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, backend: str, port: int, sizes: list[int], repeats: int) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    device = torch.device(f"cuda:{rank}") if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    try:
        for nbytes in sizes:
            x = torch.randn(nbytes // 4, device=device)
            for _ in range(2):
                dist.all_reduce(x)
            if backend == "nccl":
                torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(repeats):
                dist.all_reduce(x)
            if backend == "nccl":
                torch.cuda.synchronize()
            secs = (time.perf_counter() - t0) / repeats
            slowest_t = torch.tensor([secs], dtype=torch.float64, device=device)
            dist.all_reduce(slowest_t, op=dist.ReduceOp.MAX)  # the collective is as slow as its slowest rank
            if rank == 0:
                slowest = float(slowest_t.item())
                algbw = nbytes / slowest / 1e9
                print(
                    json.dumps(
                        {
                            "probe": f"allreduce.{nbytes}",
                            "bytes": nbytes,
                            "world": world,
                            "time_us": round(slowest * 1e6, 1),
                            "algbw_gbs": round(algbw, 2),
                            "busbw_gbs": round(algbw * 2 * (world - 1) / world, 2),
                            "backend": backend,
                        }
                    ),
                    flush=True,
                )
            del x
    finally:
        dist.destroy_process_group()


def main(argv: list[str]) -> int:
    import torch
    import torch.multiprocessing as mp

    backend = argv[argv.index("--backend") + 1] if "--backend" in argv else "nccl"
    if backend == "nccl" and (not torch.cuda.is_available() or torch.cuda.device_count() < 2):
        print(json.dumps({"probe": "allreduce", "error": "needs at least 2 GPUs visible to torch"}), flush=True)
        return 0
    world = (
        int(argv[argv.index("--world") + 1])
        if "--world" in argv
        else (torch.cuda.device_count() if backend == "nccl" else 2)
    )
    max_bytes = int(argv[argv.index("--max-bytes") + 1]) if "--max-bytes" in argv else 1 << 30
    sizes, n = [], 1 << 20
    while n <= max_bytes:
        sizes.append(n)
        n *= 4
    if sizes[-1] < max_bytes:
        sizes.append(max_bytes)
    repeats = int(argv[argv.index("--repeats") + 1]) if "--repeats" in argv else 10
    os.environ.setdefault("NCCL_DEBUG", "WARN")
    mp.spawn(_worker, args=(world, backend, _free_port(), sizes, repeats), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
