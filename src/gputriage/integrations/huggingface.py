"""The Hugging Face Trainer: report each optimizer step to `gputriage run`.

    trainer = transformers.Trainer(..., callbacks=[GputriageCallback()])

Samples per step: the per-device batch size x gradient accumulation; tokens: what the Trainer
counts (`state.num_input_tokens_seen`, with `include_num_input_tokens_seen=True`).
"""

from __future__ import annotations

from typing import Any

try:
    from transformers import TrainerCallback
except ImportError as exc:
    raise ImportError("gputriage.integrations.huggingface needs transformers: pip install transformers") from exc

from gputriage.inworkload import progress


class GputriageCallback(TrainerCallback):
    """One `gputriage.step()` per optimizer step of the Trainer."""

    def __init__(self) -> None:
        self._tokens_seen = 0

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)
        progress.step(
            samples=args.per_device_train_batch_size * args.gradient_accumulation_steps,
            tokens=max(0, seen - self._tokens_seen),
        )
        self._tokens_seen = seen
