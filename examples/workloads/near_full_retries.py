"""Training with the GPU's memory nearly full and a batch shape that changes every step (unpadded text:
8k to 48k tokens a batch): another buffer leaves the loop about 10 GiB, the activations of each new size do
not fit the blocks the caching allocator holds, so it gives its cache back to the driver (a synchronizing
cudaFree) and calls cudaMalloc again — `num_alloc_retries` climbs. A 4-layer bf16 MLP of width 4096."""

import argparse
import random
import time

import torch

from gputriage import step

LAYERS, D, LEFT_GIB = 4, 4096, 10


def main(seconds: float = 10.0, left_gib: float = LEFT_GIB, max_tokens: int = 49_152) -> None:
    model = torch.nn.Sequential(*[m for _ in range(LAYERS) for m in (torch.nn.Linear(D, D), torch.nn.GELU())])
    model = model.cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    free, _ = torch.cuda.mem_get_info()
    other = torch.empty(max(0, free - int(left_gib * 2**30)), dtype=torch.uint8, device="cuda")
    rnd = random.Random(0)

    def train() -> int:
        tokens = rnd.randrange(8_192, max_tokens, 8)
        x = torch.randn(tokens, D, device="cuda", dtype=torch.bfloat16)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return tokens

    for _ in range(3):
        train()
    torch.cuda.synchronize()
    t0, n, done = time.perf_counter(), 0, 0
    while time.perf_counter() - t0 < seconds:
        tokens = train()
        n += 1
        done += tokens
        step(tokens=tokens)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    stats = torch.cuda.memory_stats()
    print(
        f"throughput: {done / dt:.0f} tokens/s, {6 * done * LAYERS * D * D / dt / 1e12:.0f} TFLOP/s; "
        f"alloc retries {stats['num_alloc_retries']}, cudaMalloc {stats.get('num_device_alloc')}, "
        f"cudaFree {stats.get('num_device_free')}, other buffer {other.numel() / 2**30:.1f} GiB"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--left-gib", type=float, default=LEFT_GIB, help="memory left to the loop")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=49_152,
        help="the longest batch (8 GiB and 65,536: the first version, out of memory at its second step)",
    )
    args = parser.parse_args()
    main(args.seconds, args.left_gib, args.max_tokens)
