"""PyG's generic loaders over a sampler object (``volley.loader.NodeLoader`` / ``LinkLoader``,
``volley.generic_loader.NeighborSampler``): the same batches as the neighbor loaders with the
same options, both graph kinds, and clear errors for what they cannot run."""

from __future__ import annotations

import copy

import pytest

import volley
from volley.generic_loader import NeighborSampler, sampler_options
from volley.loader import LinkLoader, LinkNeighborLoader, NeighborLoader, NodeLoader

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from test_data_loader import WRITES, epoch, heterogeneous, homogeneous  # noqa: E402
from torch_geometric.sampler import BaseSampler  # noqa: E402
from torch_geometric.sampler import NeighborSampler as PygNeighborSampler  # noqa: E402

# PyG's NeighborSampler warns that it runs without pyg-lib (only its options are read here).
pytestmark = pytest.mark.filterwarnings("ignore:Using 'NeighborSampler' without")


def test_node_loader_is_the_neighbor_loader_with_the_samplers_options():
    data = homogeneous()
    sampler = NeighborSampler(data, num_neighbors=[3, 2], replace=True, subgraph_type="induced")
    loader = NodeLoader(data, node_sampler=sampler, input_nodes=torch.arange(50), batch_size=16,
                        shuffle=True, seed=7)
    reference = NeighborLoader(data, [3, 2], input_nodes=torch.arange(50), replace=True,
                               subgraph_type="induced", batch_size=16, shuffle=True, seed=7)
    assert isinstance(loader, NeighborLoader) and isinstance(loader, NodeLoader)
    assert not isinstance(loader, LinkLoader)
    assert isinstance(loader, torch.utils.data.DataLoader)
    assert loader.subgraph_type == "induced" and len(loader) == 4
    assert epoch(loader) == epoch(reference)


def test_heterogeneous_node_loader():
    data = heterogeneous()
    sampler = NeighborSampler(data, num_neighbors=[3, 2])
    assert sampler.is_hetero and not sampler.is_temporal
    loader = NodeLoader(data, node_sampler=sampler, input_nodes="paper", batch_size=8, seed=3)
    reference = NeighborLoader(data, [3, 2], input_nodes="paper", batch_size=8, seed=3)
    assert isinstance(loader, NodeLoader) and epoch(loader) == epoch(reference)


@pytest.mark.parametrize("hetero", [False, True])
def test_link_loader_is_the_link_neighbor_loader(hetero):
    data = heterogeneous() if hetero else homogeneous()
    label_index = WRITES if hetero else None
    sampler = NeighborSampler(data, num_neighbors=[3])
    loader = LinkLoader(data, link_sampler=sampler, edge_label_index=label_index,
                        neg_sampling_ratio=1.0, batch_size=32, shuffle=True, seed=5)
    reference = LinkNeighborLoader(data, [3], edge_label_index=label_index,
                                   neg_sampling_ratio=1.0, batch_size=32, shuffle=True, seed=5)
    assert isinstance(loader, LinkLoader) and not isinstance(loader, NodeLoader)
    assert epoch(loader) == epoch(reference)


def test_pygs_neighbor_sampler_is_read_as_its_options():
    data = homogeneous()
    pyg = PygNeighborSampler(data, num_neighbors=[4, 1], disjoint=True)
    assert sampler_options(pyg)["num_neighbors"] == [4, 1]
    loader = NodeLoader(data, node_sampler=pyg, batch_size=10, seed=1)
    reference = NeighborLoader(data, [4, 1], disjoint=True, batch_size=10, seed=1)
    assert epoch(loader) == epoch(reference)


def test_num_neighbors_reads_and_sets_as_pygs():
    sampler = NeighborSampler(homogeneous(), num_neighbors=[5])
    other = copy.copy(sampler)
    other.num_neighbors = [-1]  # what Lightning's eval_loader_kwargs does to a copy
    assert sampler.num_neighbors.values == [5] and other.num_neighbors.values == [-1]
    assert isinstance(sampler, BaseSampler)
    assert "num_neighbors=[5]" in repr(sampler)


def test_refusals_name_what_is_wrong():
    data = homogeneous()

    class Custom(BaseSampler):
        def sample_from_nodes(self, *args, **kwargs):
            pass

        def sample_from_edges(self, *args, **kwargs):
            pass

    with pytest.raises(volley.VolleyTypeError, match="a Custom sampler"):
        NodeLoader(data, node_sampler=Custom())
    with pytest.raises(volley.VolleyTypeError, match="a Custom sampler"):
        LinkLoader(data, link_sampler=Custom())
    sampler = NeighborSampler(data, num_neighbors=[2])
    with pytest.raises(volley.VolleyNotImplementedError, match="custom_cls"):
        NodeLoader(data, node_sampler=sampler, custom_cls=object())
    with pytest.raises(volley.VolleyNotImplementedError, match="input_id"):
        NodeLoader(data, node_sampler=sampler, input_id=torch.arange(3))
    with pytest.raises(volley.VolleyNotImplementedError, match="sample_direction='backward'"):
        NeighborSampler(data, num_neighbors=[2], sample_direction="backward")
    with pytest.raises(volley.VolleyValueError, match="subgraph_type"):
        NeighborSampler(data, num_neighbors=[2], subgraph_type="sideways")
    with pytest.raises(volley.VolleyNotImplementedError, match="volley.loader.NodeLoader"):
        sampler.sample_from_nodes(None)
    with pytest.raises(volley.VolleyNotImplementedError, match="volley.loader.LinkLoader"):
        sampler.sample_from_edges(None)
    # PyG builds a weighted sampler only with pyg-lib installed; it then keeps the tensor.
    weighted = PygNeighborSampler(data, num_neighbors=[2])
    weighted.edge_weight = torch.rand(data.num_edges)
    with pytest.raises(volley.VolleyNotImplementedError, match="edge_weight set"):
        NodeLoader(data, node_sampler=weighted)


def test_weighted_and_temporal_options_travel_through_volleys_sampler():
    data = homogeneous()
    data.edge_weight = torch.rand(data.num_edges, generator=torch.Generator().manual_seed(0))
    data.time = torch.arange(data.num_nodes)
    weighted = NeighborSampler(data, num_neighbors=[3], weight_attr="edge_weight")
    assert epoch(NodeLoader(data, node_sampler=weighted, batch_size=20, seed=2)) == epoch(
        NeighborLoader(data, [3], weight_attr="edge_weight", batch_size=20, seed=2))
    temporal = NeighborSampler(data, num_neighbors=[3], time_attr="time")
    assert temporal.is_temporal
    seeds = torch.arange(40)
    assert epoch(NodeLoader(data, node_sampler=temporal, input_nodes=seeds, input_time=seeds,
                            batch_size=20, seed=2)) == epoch(
        NeighborLoader(data, [3], time_attr="time", input_nodes=seeds, input_time=seeds,
                       batch_size=20, seed=2))
