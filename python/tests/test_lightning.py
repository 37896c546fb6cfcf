"""PyTorch Lightning over Volley's loaders (``volley.lightning``): PyG's data modules train on the
CPU with Volley's loaders, for ``Data`` and ``HeteroData``, node and link tasks, and Lightning's
re-instantiation with a ``DistributedSampler`` (what its DDP strategies do) splits the inputs.
Runs where pytorch_lightning is installed (the newest-torch leg)."""

from __future__ import annotations

import math

import pytest

import volley

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
pl = pytest.importorskip("pytorch_lightning")
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402
from torch_geometric.data import HeteroData  # noqa: E402
from torch_geometric.sampler import BaseSampler  # noqa: E402

from volley.generic_loader import NeighborSampler  # noqa: E402
from volley.lightning import LightningLinkData, LightningNodeData  # noqa: E402
from volley.loader import LinkLoader, NeighborLoader, NodeLoader  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def cora():
    return volley.datasets.cora(mmap=False).to_pyg()


class NodeModel(pl.LightningModule):
    """A linear classifier over the seeds' features (the batch's first ``batch_size`` rows)."""

    def __init__(self, key=None):
        super().__init__()
        self.key, self.lin = key, torch.nn.Linear(1433 if key is None else 8, 7)
        self.kinds = set()

    def _step(self, batch, name):
        store = batch if self.key is None else batch[self.key]
        self.kinds.add(type(batch).__name__)
        size = store.batch_size
        logits = self.lin(store.x[:size].float())
        loss = F.cross_entropy(logits, store.y[:size])
        self.log(f"{name}_loss", loss, batch_size=size)
        self.log(f"{name}_acc", (logits.argmax(-1) == store.y[:size]).float().mean(),
                 batch_size=size)
        return loss

    def training_step(self, batch, index):
        return self._step(batch, "train")

    def validation_step(self, batch, index):
        self._step(batch, "val")

    def test_step(self, batch, index):
        self._step(batch, "test")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01)


def trainer(epochs=2):
    return pl.Trainer(accelerator="cpu", devices=1, max_epochs=epochs, logger=False,
                      enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False)


def test_node_data_trains_cora_with_volleys_loaders(cora):
    torch.manual_seed(0)
    datamodule = LightningNodeData(cora, num_neighbors=[5], batch_size=32, num_workers=3)
    assert isinstance(datamodule.graph_sampler, NeighborSampler) and datamodule.loader == "neighbor"
    loaders = [datamodule.train_dataloader(), datamodule.val_dataloader(),
               datamodule.test_dataloader(), datamodule.predict_dataloader()]
    assert all(type(loader) is NeighborLoader for loader in loaders)
    assert [len(loader.dataset) for loader in loaders] == [140, 500, 1000, 2708]
    model = NodeModel()
    run = trainer()
    run.fit(model, datamodule)
    val_acc = float(run.callback_metrics["val_acc"])
    test_acc = run.test(model, datamodule)[0]["test_acc"]
    assert model.kinds == {"Data"}
    # A linear model over bag-of-words features: well above chance (1/7) after two epochs.
    assert val_acc > 0.3 and test_acc > 0.3


def test_full_loader_and_custom_samplers_stay_pygs(cora):
    full = LightningNodeData(cora, loader="full")
    assert not isinstance(full.train_dataloader(), NeighborLoader)

    class Custom(BaseSampler):
        def sample_from_nodes(self, *args, **kwargs):
            pass

        def sample_from_edges(self, *args, **kwargs):
            pass

    custom = LightningNodeData(cora, node_sampler=Custom(), batch_size=16)
    assert isinstance(custom.graph_sampler, Custom) and custom.loader == "custom"
    assert not isinstance(custom.train_dataloader(), NeighborLoader)


def test_eval_loader_kwargs_reach_the_eval_loaders(cora):
    sampler = NeighborSampler(cora, num_neighbors=[5])
    datamodule = LightningNodeData(cora, node_sampler=sampler, batch_size=32,
                                   eval_loader_kwargs=dict(num_neighbors=[-1], batch_size=64))
    assert datamodule.graph_sampler.num_neighbors.values == [5]
    assert datamodule.eval_graph_sampler.num_neighbors.values == [-1]
    assert len(datamodule.train_dataloader()) == math.ceil(140 / 32)
    val = datamodule.val_dataloader()
    assert isinstance(val, NodeLoader) and len(val) == math.ceil(500 / 64)
    # Every neighbor: each seed's sampled degree is its full in-degree.
    batch = next(iter(val))
    degree = torch.bincount(cora.edge_index[1], minlength=cora.num_nodes)
    seeds = batch.n_id[:batch.batch_size]
    local = torch.bincount(batch.edge_index[1], minlength=batch.num_nodes)[:batch.batch_size]
    assert torch.equal(local, degree[seeds])


def test_distributed_sampler_splits_the_inputs_as_lightnings_ddp_does(cora):
    from lightning_fabric.utilities.data import _replace_dunder_methods, _update_dataloader

    datamodule = LightningNodeData(cora, num_neighbors=[3], batch_size=16)
    with _replace_dunder_methods(DataLoader, "dataset"):
        loader = datamodule.train_dataloader()
    seen = []
    for rank in range(2):
        sampler = DistributedSampler(loader.dataset, num_replicas=2, rank=rank, shuffle=False)
        replica = _update_dataloader(loader, sampler)
        assert type(replica) is NeighborLoader and len(replica) == math.ceil(70 / 16)
        seen.append(torch.cat([batch.n_id[:batch.batch_size] for batch in replica]))
    train = cora.train_mask.nonzero().view(-1)
    assert torch.equal(torch.sort(torch.cat(seen)).values, train)
    assert not set(seen[0].tolist()) & set(seen[1].tolist())


def small_hetero(seed=0):
    generator = torch.Generator().manual_seed(seed)
    data = HeteroData()
    for name, count in (("paper", 90), ("author", 60)):
        data[name].x = torch.randn(count, 8, generator=generator)
    data["paper"].y = torch.randint(0, 7, (90,), generator=generator)
    data["paper"].train_mask = torch.arange(90) < 60
    data["paper"].val_mask = torch.arange(90) >= 60
    edges = torch.stack([torch.randint(0, 60, (400,), generator=generator),
                         torch.randint(0, 90, (400,), generator=generator)])
    data["author", "writes", "paper"].edge_index = edges
    data["paper", "rev_writes", "author"].edge_index = edges.flip(0)
    return data


def test_hetero_node_data_trains():
    torch.manual_seed(0)
    data = small_hetero()
    datamodule = LightningNodeData(data, num_neighbors=[4, 2], batch_size=16)
    assert type(datamodule.train_dataloader()).__name__ == "HeteroNeighborLoader"
    model = NodeModel(key="paper")
    trainer(epochs=1).fit(model, datamodule)
    assert model.kinds == {"HeteroData"}


@pytest.mark.parametrize("hetero", [False, True])
def test_link_data_batches_carry_the_supervision_edges(cora, hetero):
    data = small_hetero() if hetero else cora
    edges = ("author", "writes", "paper") if hetero else cora.edge_index[:, :300]
    datamodule = LightningLinkData(data, input_train_edges=edges, input_val_edges=edges,
                                   num_neighbors=[3], batch_size=64, neg_sampling_ratio=1.0)
    assert isinstance(datamodule.graph_sampler, NeighborSampler)
    for loader in (datamodule.train_dataloader(), datamodule.val_dataloader()):
        assert isinstance(loader, LinkLoader)
        batches = list(loader)
        store = [batch["author", "writes", "paper"] if hetero else batch for batch in batches]
        labels = torch.cat([s.edge_label for s in store])
        assert labels.numel() == 2 * (400 if hetero else 300)  # each edge and one negative
        assert int(labels.sum()) == (400 if hetero else 300)


def test_temporal_link_data_carries_the_label_times():
    data = small_hetero()
    data["paper"].time = torch.arange(90)
    data["author"].time = torch.arange(60)
    edge_type = ("author", "writes", "paper")
    datamodule = LightningLinkData(data, input_train_edges=edge_type,
                                   input_train_time=torch.arange(400), num_neighbors=[3],
                                   batch_size=64, time_attr="time")
    assert datamodule.graph_sampler.is_temporal
    times = torch.cat([batch[edge_type].edge_label_time
                       for batch in datamodule.train_dataloader()])
    assert torch.equal(torch.sort(times).values, torch.arange(400))
