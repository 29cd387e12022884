"""Data-parallel training where the gradient all-reduce dominates: 8 layers of 8192x8192 (537 M
parameters, 1 GB of bf16 gradients) and 16 samples per GPU, so each step's backward is far shorter
than the all-reduce of its gradients, which cannot hide behind it. Run with
`torchrun --nproc_per_node=2 ddp_allreduce.py`.

Fix: more computation per all-reduce: 16 accumulated micro-batches of 1,024 samples
(DDP.no_sync for all but the last), one all-reduce per 16 backward passes.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist

D, LAYERS = 8192, 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixed", action="store_true")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    rank, local = dist.get_rank(), int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    model = torch.nn.Sequential(*[torch.nn.Linear(D, D, bias=False) for _ in range(LAYERS)]).cuda().to(torch.bfloat16)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-6)
    micro, batch = (16, 1024) if args.fixed else (1, 16)
    x = torch.randn(batch, D, device="cuda", dtype=torch.bfloat16)

    def step() -> int:
        for i in range(micro):
            if i < micro - 1:
                with ddp.no_sync():
                    ddp(x).float().pow(2).mean().backward()
            else:
                ddp(x).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return micro * batch * dist.get_world_size()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    if rank == 0:
        print(f"loop_start: {time.time():.3f}", flush=True)
    done, t0 = 0, time.perf_counter()
    stop = torch.zeros(1, device="cuda")
    steps = 0
    while True:
        done += step()
        steps += 1
        if steps % 20 == 0:  # every rank stops at the same step (one sync every 20 steps)
            stop.fill_(float(time.perf_counter() - t0 > args.seconds))
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item():
                break
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    if rank == 0:
        print(f"throughput: {done / elapsed:.1f} samples/s ({'fixed' if args.fixed else 'pathology'})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
