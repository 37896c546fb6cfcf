"""Train a 2-layer GraphSAGE on the bundled Cora with PyTorch Lightning and Volley's loaders.

    python examples/lightning_sage.py --epochs 20
    python examples/lightning_sage.py --devices 2 --strategy ddp_spawn   # two CPU processes

The only Volley-specific line is the data module: ``volley.lightning.LightningNodeData`` takes
the arguments of ``torch_geometric.data.lightning.LightningNodeData`` and hands the trainer
Volley's loaders. Under a DDP strategy Lightning gives each loader a ``DistributedSampler``,
which it follows: each process trains on its share of the seeds. Needs pytorch_lightning.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

import volley
from volley.lightning import LightningNodeData

try:
    import pytorch_lightning as pl
except ImportError:  # pragma: no cover
    sys.exit("this example needs PyTorch Lightning: pip install pytorch-lightning")
from torch_geometric.nn import SAGEConv


class SAGE(pl.LightningModule):
    """GraphSAGE over a sampled batch; the loss and accuracy are those of the batch's seeds."""

    def __init__(self, in_channels: int, hidden: int, classes: int, lr: float):
        super().__init__()
        self.conv1, self.conv2 = SAGEConv(in_channels, hidden), SAGEConv(hidden, classes)
        self.lr = lr

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        x = F.dropout(self.conv1(x, edge_index).relu(), p=0.5, training=self.training)
        return self.conv2(x, edge_index)

    def _seeds(self, batch) -> tuple:
        size = batch.batch_size
        return self(batch.x.float(), batch.edge_index)[:size], batch.y[:size], size

    def training_step(self, batch, index):
        logits, y, size = self._seeds(batch)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, batch_size=size, sync_dist=True)
        return loss

    def validation_step(self, batch, index):
        logits, y, size = self._seeds(batch)
        accuracy = (logits.argmax(-1) == y).float().mean()
        self.log("val_acc", accuracy, batch_size=size, sync_dist=True)

    def test_step(self, batch, index):
        logits, y, size = self._seeds(batch)
        accuracy = (logits.argmax(-1) == y).float().mean()
        self.log("test_acc", accuracy, batch_size=size, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=5e-4)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--strategy", default="auto", help="Lightning's: auto, ddp, ddp_spawn")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-test-accuracy", type=float, default=0.0,
                        help="exit non-zero when the test accuracy is below this")
    args = parser.parse_args()

    pl.seed_everything(args.seed, verbose=False)
    data = volley.datasets.cora().to_pyg()  # a PyG Data with train / val / test masks
    datamodule = LightningNodeData(data, num_neighbors=args.fanouts, batch_size=args.batch_size,
                                   num_workers=2)
    model = SAGE(data.num_features, args.hidden, int(data.y.max()) + 1, args.lr)
    trainer = pl.Trainer(accelerator="cpu", devices=args.devices, strategy=args.strategy,
                         max_epochs=args.epochs, logger=False, enable_checkpointing=False,
                         enable_model_summary=False, enable_progress_bar=False)
    trainer.fit(model, datamodule)
    results = trainer.test(model, datamodule, verbose=False)
    if trainer.global_rank != 0:
        return 0
    test_accuracy = results[0]["test_acc"]
    print(f"Cora, {args.epochs} epochs on {args.devices} process(es): "
          f"test accuracy {test_accuracy:.3f}")
    return 0 if test_accuracy >= args.min_test_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
