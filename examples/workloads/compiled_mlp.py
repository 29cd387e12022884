"""A wide MLP in bf16 under torch.compile (default mode), large batch: compute-bound once compiled."""
import time, torch
from gputriage import step
D = 8192
model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(D, D), torch.nn.GELU())]).cuda().bfloat16()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
f = torch.compile(model)
x = torch.randn(8192, D, device="cuda", dtype=torch.bfloat16)
def one():
    f(x).float().pow(2).mean().backward(); opt.step(); opt.zero_grad(set_to_none=True)
for _ in range(3): one()
torch.cuda.synchronize(); t0 = time.perf_counter(); n = 0
while time.perf_counter() - t0 < 10:
    one(); n += 1; step(samples=8192)
torch.cuda.synchronize(); dt = time.perf_counter() - t0
print(f"throughput: {n * 6 * 4 * D * D * 8192 / dt / 1e12:.0f} TFLOP/s")
