"""PyTorch Lightning's `Trainer.fit` of a tiny model: a 3-layer MLP of width 256 on batches of 64 from an
in-memory TensorDataset, Adam, Lightning's defaults (a progress bar, its hooks and loop). Each step's kernels
take a few microseconds; Lightning's loop, hooks and the optimizer's launches take longer on the host: the
GPU waits for the loop, launch_bound."""

import argparse
import time

import torch

try:
    import pytorch_lightning as pl
except ImportError:  # the `lightning` package's name for it
    import lightning.pytorch as pl

from gputriage import step

BATCH, WIDTH = 64, 256


class Tiny(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(32, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
            torch.nn.Linear(WIDTH, 1),
        )  # fmt: skip

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss)
        return loss

    def on_train_batch_end(self, *args: object) -> None:
        step(samples=BATCH)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main(seconds: float = 10.0) -> None:
    data = torch.utils.data.TensorDataset(torch.randn(65536, 32), torch.randn(65536, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True)
    trainer = pl.Trainer(
        accelerator="gpu",
        devices=1,
        max_epochs=1000,
        max_time={"seconds": seconds},
        logger=False,
        enable_checkpointing=False,
    )
    t0 = time.perf_counter()
    trainer.fit(Tiny(), loader)
    print(f"steps: {trainer.global_step} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)
