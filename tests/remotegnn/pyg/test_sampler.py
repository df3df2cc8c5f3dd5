"""RemoteNeighborSampler in PyG's NodeLoader: the pipeline's batches, sampled where the data
lives, in worker processes too, without ever pulling the structure to the client."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.loader import NodeLoader
from torch_geometric.sampler import NodeSamplerInput

from remotegnn.loader import DistributedGraphLoader
from remotegnn.pyg import RemoteFeatureStore, RemoteGraphStore, RemoteNeighborSampler
from remotegnn.server import ServerOptions

FANOUTS, BATCH, SEED = [5, 3], 50, 3
FIELDS = ("n_id", "edge_index", "e_id", "x", "y", "input_id")


@pytest.fixture(scope="module")
def pipeline_batches(rmat) -> list[list]:
    """Epochs 0 and 1 of DistributedGraphLoader over the train split, shuffle=False."""
    train = torch.from_numpy(np.array(rmat.split("train"), dtype=np.int64))
    with DistributedGraphLoader(
        rmat.path,
        FANOUTS,
        input_nodes=train,
        batch_size=BATCH,
        seed=SEED,
        zero_copy=False,
        server=ServerOptions(batch_creators=1, vector_loaders=1),
        timeout=20,
        edge_ids=True,
    ) as loader:
        return [list(loader) for _ in range(2)]


def stores(kind: str, rmat, request):
    if kind == "local":
        return RemoteFeatureStore.local(rmat.path, cache_bytes=64 << 10), RemoteGraphStore.local(rmat.path)
    address = request.getfixturevalue("rmat_server").address
    return RemoteFeatureStore.connect(address), RemoteGraphStore.connect(address)


def assert_same_batches(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected):
        for name in FIELDS:
            assert torch.equal(mine[name], theirs[name]), name
        assert mine.batch_size == theirs.batch_size
        assert mine.num_sampled_nodes == theirs.num_sampled_nodes
        assert mine.num_sampled_edges == theirs.num_sampled_edges


@pytest.mark.parametrize("kind", ["local", "remote"])
def test_node_loader_yields_the_pipelines_batches(kind, rmat, pipeline_batches, request, monkeypatch):
    fs, gs = stores(kind, rmat, request)

    def no_structure(*_):
        raise AssertionError("the sampler must not read the structure into the client")

    monkeypatch.setattr(RemoteGraphStore, "_get_edge_index", no_structure)
    sampler = RemoteNeighborSampler(gs, FANOUTS, batch_size=BATCH, seed=SEED)
    loader = NodeLoader(
        (fs, gs), node_sampler=sampler, input_nodes=torch.from_numpy(np.array(rmat.split("train"))), batch_size=BATCH
    )
    assert any(not torch.equal(a.e_id, b.e_id) for a, b in zip(*pipeline_batches))  # epochs differ: keys matter
    for epoch, expected in enumerate(pipeline_batches):
        sampler.set_epoch(epoch)
        assert_same_batches(list(loader), expected)


def test_two_worker_processes_get_the_same_batches(rmat, rmat_server, pipeline_batches):
    fs, gs = RemoteFeatureStore.connect(rmat_server.address), RemoteGraphStore.connect(rmat_server.address)
    fs[None, "x", 0]  # the parent's connection is open when the workers fork (PyG issue #7808)
    sampler = RemoteNeighborSampler(gs, FANOUTS, batch_size=BATCH, seed=SEED)
    loader = NodeLoader(
        (fs, gs),
        node_sampler=sampler,
        input_nodes=torch.from_numpy(np.array(rmat.split("train"))),
        batch_size=BATCH,
        num_workers=2,
    )
    assert_same_batches(list(loader), pipeline_batches[0])
    assert fs[None, "y", 0] == int(rmat.labels[0])  # and the parent's own connection still works


def test_heterogeneous_batches_sample_one_edge_type(small, authors):
    cites, knows = ("paper", "cites", "paper"), ("author", "knows", "author")
    fs = RemoteFeatureStore.local({"paper": small.path, "author": authors.path})
    gs = RemoteGraphStore.local({cites: small.path, knows: authors.path})
    sampler = RemoteNeighborSampler(gs, [1, 2, 4], batch_size=2, edge_type=cites)
    batch = next(
        iter(NodeLoader((fs, gs), node_sampler=sampler, input_nodes=("paper", torch.arange(14)), batch_size=2))
    )
    assert batch.node_types == ["paper"] and batch.edge_types == [cites]
    homogeneous = RemoteGraphStore.local(small.path).sample(None, np.array([0, 1]), [1, 2, 4], False, (0, 0, 0))
    assert batch["paper"].n_id.tolist() == homogeneous.n_id.tolist()
    assert batch[cites].edge_index.tolist() == homogeneous.edge_index.tolist()
    assert batch["paper"].num_sampled_nodes == [2, 2, 3, 4]  # PyG's golden case
    assert torch.equal(batch["paper"].x, torch.from_numpy(np.array(small.features))[batch["paper"].n_id])
    assert batch["paper"].input_id.tolist() == [0, 1] and batch["paper"].batch_size == 2


def test_keys_follow_the_documented_rule(rmat):
    gs = RemoteGraphStore.local(rmat.path)
    sampler = RemoteNeighborSampler(gs, [2], seed=9, batch_size=10)
    sampler.set_epoch(4)
    inputs = NodeSamplerInput(input_id=torch.tensor([30, 31, 32]), node=torch.tensor([7, 8, 9]))
    assert sampler.keys_for(inputs) == (9, 4, 3)
    assert RemoteNeighborSampler(gs, [2]).keys_for(inputs) == (0, 0, 30)  # default: the first input id


def test_misuse_is_refused_with_pyg_error_types(small, authors):
    homogeneous = RemoteGraphStore.local(small.path)
    typed = RemoteGraphStore.local(
        {("paper", "cites", "paper"): small.path, ("author", "knows", "author"): authors.path}
    )
    with pytest.raises(TypeError, match="RemoteGraphStore"):
        RemoteNeighborSampler(object(), [2])
    with pytest.raises(ValueError, match="fanout"):
        RemoteNeighborSampler(homogeneous, [2, 0])
    with pytest.raises(ValueError, match="2 dataset edge types.*edge_type="):
        RemoteNeighborSampler(typed, [2])
    with pytest.raises(KeyError, match="'writes'"):
        RemoteNeighborSampler(typed, [2], edge_type=("author", "writes", "paper"))
    sampler = RemoteNeighborSampler(typed, [2], edge_type=("author", "knows", "author"))
    with pytest.raises(ValueError, match="type 'paper'.*targets are 'author'"):
        sampler.sample_from_nodes(NodeSamplerInput(torch.tensor([0]), torch.tensor([0]), input_type="paper"))
    with pytest.raises(ValueError, match="time"):
        RemoteNeighborSampler(homogeneous, [2]).sample_from_nodes(
            NodeSamplerInput(torch.tensor([0]), torch.tensor([0]), time=torch.tensor([1]))
        )
    with pytest.raises(NotImplementedError, match="LinkNeighborLoader"):
        RemoteNeighborSampler(homogeneous, [2]).sample_from_edges(None)
