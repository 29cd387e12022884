"""fp32 GEMMs with TF32 off: the tensor cores sit idle while CUDA cores do full-precision math.

Fix: bf16 autocast (or allow TF32: torch.backends.cuda.matmul.allow_tf32 = True).
"""

import torch

N = 8192


def build(fixed: bool):
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(N, N, device="cuda")
    b = torch.randn(N, N, device="cuda")

    def step() -> float:
        if fixed:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                a @ b
        else:
            a @ b
        return 2 * N**3 / 1e12

    return step, "TFLOP"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)
