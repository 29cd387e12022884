"""One request larger than all the GPU could give: an output head's weights, a few steps on short sequences, then
the logits of one whole long sequence materialized in a single fp32 tensor (sequence x vocabulary), larger than the
device itself.

Expected: memory.request_too_large, naming the line of the logits (`# planted`) and the size asked.
Fix: compute the loss over chunks of the sequence (chunked cross-entropy) instead of one tensor of every logit.
"""

import time

import torch

VOCAB, HIDDEN = 128_256, 4096


def main() -> None:
    _, total = torch.cuda.mem_get_info()
    head = torch.randn(HIDDEN, VOCAB, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(2048, HIDDEN, device="cuda", dtype=torch.bfloat16)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.0:  # short sequences: fine
        (x @ head).float().logsumexp(-1).mean().item()
    seq = int(1.2 * total / (VOCAB * 4)) + 1  # a sequence whose fp32 logits outgrow the GPU
    logits = torch.empty(seq, VOCAB, device="cuda", dtype=torch.float32)  # planted
    print(logits.shape)


if __name__ == "__main__":
    main()
