"""Callbacks that report a framework's training steps to `gputriage run` through `gputriage.step()`:
`gputriage.integrations.lightning.GputriageCallback` (PyTorch Lightning) and
`gputriage.integrations.huggingface.GputriageCallback` (the Hugging Face Trainer). Each module
imports its framework; neither is a dependency of gputriage."""


def batch_size(batch: object) -> int:
    """The samples in a batch: the leading dimension of its first tensor (a tensor, a tuple or list, a dict)."""
    seen = batch
    for _ in range(4):
        shape = getattr(seen, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else 1
        if isinstance(seen, dict) and seen:
            seen = next(iter(seen.values()))
        elif isinstance(seen, (list, tuple)) and seen:
            seen = seen[0]
        else:
            break
    return 0


def tokens(batch: object) -> int:
    """The tokens in a batch of token ids (an `input_ids` entry, or a 2-D integer tensor); 0 when unknown."""
    ids = batch.get("input_ids") if isinstance(batch, dict) else None
    if ids is None:
        return 0
    numel = getattr(ids, "numel", None)
    return int(numel()) if callable(numel) else 0
