"""Batch-1 token generation: each step multiplies one activation row by 16 bf16 weight matrices of
8192x8192 (2 GiB of weights read per token): memory-bound by design."""
import time, torch
from gputriage import step
W = [torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) * 0.01 for _ in range(16)]
x = torch.randn(1, 8192, device="cuda", dtype=torch.bfloat16)
def one():
    h = x
    for w in W:
        h = torch.tanh(h @ w)
    return h
for _ in range(10): one()
torch.cuda.synchronize(); t0 = time.perf_counter(); n = 0
while time.perf_counter() - t0 < 10:
    for _ in range(20): one()
    n += 20; step(tokens=20)
torch.cuda.synchronize(); dt = time.perf_counter() - t0
print(f"throughput: {n / dt:.1f} tokens/s, {n * 16 * 8192 * 8192 * 2 / dt / 1e9:.0f} GB/s of weights")
