"""PyTorch Lightning: report each training batch to `gputriage run`.

trainer = lightning.Trainer(callbacks=[GputriageCallback()])
"""

from __future__ import annotations

from typing import Any

try:
    from lightning.pytorch.callbacks import Callback
except ImportError as exc:
    raise ImportError("gputriage.integrations.lightning needs PyTorch Lightning: pip install lightning") from exc

from gputriage.integrations import batch_size, tokens
from gputriage.inworkload import progress


class GputriageCallback(Callback):
    """One `gputriage.step()` per training batch, with its samples (and tokens, for `input_ids` batches)."""

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        progress.step(samples=batch_size(batch), tokens=tokens(batch))
