"""An unfused chain of elementwise ops: each op reads and writes the whole tensor from HBM.

Fix: torch.compile fuses the chain into one kernel (one read, one write).
"""

import torch

ELEMENTS = 2**28  # 1 GiB of fp32


def chain(x: torch.Tensor) -> torch.Tensor:
    y = x * 1.5
    y = y + 0.25
    y = torch.sin(y)
    y = y * y
    y = y - 0.5
    y = torch.relu(y)
    return y * 2.0


def build(fixed: bool):
    x = torch.randn(ELEMENTS, device="cuda")
    fn = torch.compile(chain) if fixed else chain

    def step() -> float:
        fn(x)
        return ELEMENTS * 4 / 1e9

    return step, "GB of input"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)
