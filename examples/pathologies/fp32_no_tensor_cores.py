"""fp32 GEMMs with TF32 off: the tensor cores sit idle while CUDA cores do full-precision math.

Fix: bf16 autocast (or allow TF32: torch.backends.cuda.matmul.allow_tf32 = True).
"""

import torch

N = 8192


def build(fixed: bool):
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(N, N, device="cuda")
    b = torch.randn(N, N, device="cuda")

    steps = [0]

    def step() -> float:
        if fixed:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                a @ b
        else:
            a @ b
        steps[0] += 1
        if steps[0] % 16 == 0:
            # as a training loop reading its loss now and then: without it the host runs ~1000 fp32
            # GEMMs (20 s) ahead of the GPU, and the run ends long after its --seconds
            torch.cuda.synchronize()
        return 2 * N**3 / 1e12

    return step, "TFLOP"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)
