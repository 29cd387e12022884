"""The optimizer steps on the CPU: fp32 master weights kept in host memory, gradients copied to
the host every step and AdamW run there on CPU tensors while the GPU waits.

Fix: keep the optimizer on the GPU (AdamW(fused=True) on the CUDA parameters).
"""

import torch

B, D, LAYERS = 2048, 4096, 4


def build(fixed: bool):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(D, D) for _ in range(LAYERS)]).cuda()
    x = torch.randn(B, D, device="cuda")
    if fixed:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        master = None
    else:
        master = [p.detach().cpu().clone().requires_grad_(True) for p in model.parameters()]
        opt = torch.optim.AdamW(master, lr=1e-4, foreach=True)

    def step() -> float:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        if master is not None:
            for m, p in zip(master, model.parameters()):
                m.grad = p.grad.detach().cpu()
            opt.step()
            with torch.no_grad():
                for m, p in zip(master, model.parameters()):
                    p.copy_(m, non_blocking=True)
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        model.zero_grad(set_to_none=True)
        return B

    return step, "samples"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)
