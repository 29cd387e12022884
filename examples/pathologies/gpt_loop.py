"""A realistic training loop: a 6-layer GPT (d=768, 12 heads, 512 tokens), batches from a
DataLoader with 4 workers and pinned memory, bf16 autocast, fused AdamW. Not a mistake: the loop
a profiler must catch in its steady state, after the workers, the allocator and cuBLAS warmed up.

--fixed: the same loop (there is nothing to fix); its verdict is the healthy one.
--workers N: DataLoader workers (default 4; 0 loads batches on the training thread: "it got slower").
"""

import sys

import torch

VOCAB, SEQ, BATCH, D, LAYERS, HEADS = 32768, 512, 32, 768, 6, 12


class Tokens(torch.utils.data.IterableDataset):
    """Random token windows, as a tokenized corpus read from memory gives them."""

    def __iter__(self):
        g = torch.Generator().manual_seed(
            torch.utils.data.get_worker_info().id if torch.utils.data.get_worker_info() else 0
        )
        while True:
            yield torch.randint(0, VOCAB, (SEQ + 1,), generator=g)


class GPT(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, D)
        self.pos = torch.nn.Parameter(torch.zeros(SEQ, D))
        layer = torch.nn.TransformerEncoderLayer(
            D, HEADS, 4 * D, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.blocks = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = torch.nn.Linear(D, VOCAB, bias=False)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(SEQ))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        h = self.emb(idx) + self.pos
        h = self.blocks(h, mask=self.mask, is_causal=True)
        return self.head(h)


def build(fixed: bool):
    model = GPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    loader = torch.utils.data.DataLoader(
        Tokens(), batch_size=BATCH, num_workers=WORKERS, pin_memory=True, prefetch_factor=4 if WORKERS else None
    )
    batches = iter(loader)

    def step() -> float:
        tokens = next(batches).cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return BATCH * SEQ

    return step, "tokens"


WORKERS = 4

if __name__ == "__main__":
    from _loop import main

    if "--workers" in sys.argv:
        i = sys.argv.index("--workers")
        WORKERS = int(sys.argv[i + 1])
        del sys.argv[i : i + 2]

    main(build, __doc__)
