"""The Lightning and Hugging Face Trainer callbacks, with the real libraries on the CPU: each training
step reaches gputriage's counters, with its samples (and tokens)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from gputriage.integrations import batch_size, tokens
from gputriage.sampling.progress import ProgressReader


def _train(code: str, tmp_path) -> tuple[float, float, float]:
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "GPUTRIAGE_PROGRESS_DIR": str(tmp_path), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    totals = ProgressReader(tmp_path).totals()
    assert totals is not None
    return totals


def test_batch_size_and_tokens_from_the_usual_batch_shapes():
    torch = pytest.importorskip("torch")
    x = torch.zeros(8, 16, dtype=torch.long)
    assert batch_size(x) == 8 and batch_size((x, x[:, 0])) == 8 and batch_size({"input_ids": x}) == 8
    assert tokens({"input_ids": x}) == 128 and tokens((x,)) == 0 and batch_size("text") == 0


def test_the_lightning_callback_reports_every_training_batch(tmp_path):
    pytest.importorskip("lightning")
    steps, samples, _ = _train(
        """
        import torch, lightning as L
        from gputriage.integrations.lightning import GputriageCallback

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(4, 1)
            def training_step(self, batch, i):
                x, y = batch
                return torch.nn.functional.mse_loss(self.layer(x), y)
            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.01)

        data = torch.utils.data.TensorDataset(torch.randn(60, 4), torch.randn(60, 1))
        loader = torch.utils.data.DataLoader(data, batch_size=6)
        L.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False,
                  callbacks=[GputriageCallback()]).fit(M(), loader)
    """,
        tmp_path,
    )
    assert (steps, samples) == (20.0, 120.0)


def test_the_hugging_face_callback_reports_every_optimizer_step(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    steps, samples, toks = _train(
        """
        import torch
        from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
        from gputriage.integrations.huggingface import GputriageCallback

        config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32, max_position_embeddings=32, num_labels=2)
        model = BertForSequenceClassification(config)   # random weights: nothing is downloaded

        class Data(torch.utils.data.Dataset):
            def __len__(self):
                return 48
            def __getitem__(self, i):
                return {"input_ids": torch.randint(0, 64, (12,)), "labels": torch.tensor(i % 2)}

        args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, gradient_accumulation_steps=2,
                                 max_steps=5, report_to=[], save_strategy="no", use_cpu=True,
                                 include_num_input_tokens_seen=True, disable_tqdm=True, logging_strategy="no")
        Trainer(model=model, args=args, train_dataset=Data(), callbacks=[GputriageCallback()]).train()
    """,
        tmp_path,
    )
    assert steps == 5.0 and samples == 5 * 4 * 2
    assert toks == 5 * 4 * 2 * 12  # the Trainer's own count of input tokens
