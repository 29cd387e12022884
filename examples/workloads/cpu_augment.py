"""Images decoded and augmented on the training thread (no DataLoader workers): random crops, flips and
a per-pixel colour jitter in numpy, then a ResNet-ish conv net in bf16 on the GPU."""
import time, numpy as np, torch
from gputriage import step
net = torch.nn.Sequential(*[m for c in (64, 128, 256) for m in (torch.nn.LazyConv2d(c, 3, padding=1), torch.nn.ReLU(),
                           torch.nn.MaxPool2d(2))], torch.nn.Flatten(), torch.nn.LazyLinear(1000)).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
rng = np.random.default_rng(0)
def batch(n=64):
    imgs = rng.integers(0, 255, size=(n, 256, 256, 3), dtype=np.uint8)
    out = np.empty((n, 3, 224, 224), dtype=np.float32)
    for i in range(n):
        y, x = rng.integers(0, 32, 2)
        im = imgs[i, y:y + 224, x:x + 224].astype(np.float32) / 255.0
        if rng.random() < 0.5: im = im[:, ::-1]
        im = im * rng.uniform(0.8, 1.2, size=3) + rng.normal(0, 0.02, size=im.shape)
        out[i] = im.transpose(2, 0, 1)
    return torch.from_numpy(out)
def train(b):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = net(b.cuda(non_blocking=True)).float().logsumexp(1).mean()
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
for _ in range(3): train(batch())
torch.cuda.synchronize(); t0 = time.perf_counter(); n = 0
while time.perf_counter() - t0 < 10:
    train(batch()); n += 64; step(samples=64)
torch.cuda.synchronize()
print(f"throughput: {n / (time.perf_counter() - t0):.1f} samples/s")
