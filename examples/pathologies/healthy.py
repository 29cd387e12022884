"""A healthy workload: large bf16 GEMMs back to back, tensor cores busy. Nothing to fix."""

import torch

N = 8192


def build(fixed: bool):
    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)

    def step() -> float:
        for _ in range(4):
            a @ b
        return 4 * 2 * N**3 / 1e12

    return step, "TFLOP"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)
