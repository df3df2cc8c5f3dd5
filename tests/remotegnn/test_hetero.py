"""Heterogeneous graphs: PyG's per-type view over the one-id-space dataset, through the real loader."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import HeteroData

from contracts.dataset import EdgeType, HeteroMeta, NodeType
from foundation.errors import UsageError
from remotegnn.hetero import HeteroLayout, hop_bounds
from remotegnn.loader import DistributedGraphLoader
from tests.remotegnn.test_loader import FAST

CITES, WRITES, WRITTEN_BY = (
    ("paper", "cites", "paper"),
    ("author", "writes", "paper"),
    ("paper", "written_by", "author"),
)


def graph(seed: int = 0) -> HeteroData:
    """Papers (with labels and masks) citing each other, authors writing them, both ways."""
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data["paper"].x = torch.randn(60, 6, generator=g)
    data["paper"].y = torch.randint(0, 3, (60,), generator=g)
    data["paper"].train_mask = torch.rand(60, generator=g) < 0.5
    data["author"].x = torch.randn(25, 2, generator=g)
    data[CITES].edge_index = torch.randint(0, 60, (2, 300), generator=g)
    writes = torch.stack([torch.randint(0, 25, (150,), generator=g), torch.randint(0, 60, (150,), generator=g)])
    data[WRITES].edge_index = writes
    data[WRITTEN_BY].edge_index = writes.flip(0)
    return data


def batches(data: HeteroData, num_neighbors, **options) -> list[HeteroData]:
    with DistributedGraphLoader(
        data, num_neighbors, batch_size=8, zero_copy=False, seed=2, **FAST, **options
    ) as loader:
        return list(loader)


def test_batches_are_pyg_hetero_batches_of_real_rows_and_edges():
    data = graph()
    fanouts = {CITES: [3, 2], WRITES: [2, 1], WRITTEN_BY: [0, 2]}
    out = batches(data, fanouts, input_nodes=("paper", data["paper"].train_mask))
    train = data["paper"].train_mask.nonzero().view(-1)
    assert sum(b["paper"].batch_size for b in out) == len(train)
    assert sorted(torch.cat([b["paper"].input_id for b in out]).tolist()) == train.tolist()  # a mask: the ids
    for batch in out:
        size = batch["paper"].batch_size
        assert torch.equal(batch["paper"].n_id[:size], batch["paper"].input_id)  # seeds first
        for node_type in ("paper", "author"):
            assert torch.equal(batch[node_type].x, data[node_type].x[batch[node_type].n_id])  # its own columns
        assert torch.equal(batch["paper"].y, data["paper"].y[batch["paper"].n_id])
        assert torch.equal(batch["paper"].train_mask, data["paper"].train_mask[batch["paper"].n_id])
        assert "y" not in batch["author"] and "train_mask" not in batch["author"]
        for src, rel, dst in (CITES, WRITES, WRITTEN_BY):
            store = batch[src, rel, dst]
            ends = torch.stack([batch[src].n_id[store.edge_index[0]], batch[dst].n_id[store.edge_index[1]]])
            assert torch.equal(ends, data[src, rel, dst].edge_index[:, store.e_id])  # real edges, right ids
        # Per-type fanouts hold: at most 3 cited papers per seed at hop 1, no author->paper... at hop 2.
        hop1 = batch[CITES].num_sampled_edges[0]
        assert np.bincount(batch[CITES].edge_index[1, :hop1].numpy(), minlength=size).max() <= 3
        assert batch[WRITTEN_BY].num_sampled_edges[0] == 0  # fanout 0 at hop 1: not sampled
        assert sum(batch["paper"].num_sampled_nodes) == batch["paper"].num_nodes


def test_one_list_samples_every_edge_type_and_a_node_type_means_all_its_nodes():
    data = graph(1)
    out = batches(data, [2, 2], input_nodes="author")
    assert sum(b["author"].batch_size for b in out) == 25
    assert all(b["author"].input_id.tolist() == b["author"].n_id[: b["author"].batch_size].tolist() for b in out)
    assert any(b[WRITTEN_BY].num_edges > 0 for b in out)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_neighbors": {("paper", "likes", "paper"): [2]}}, "is not an edge type of this graph"),
        ({"num_neighbors": [2], "input_nodes": ("venue", None)}, "node type 'venue'"),
        ({"num_neighbors": [2], "input_nodes": torch.arange(3)}, "give a node type, or"),
        ({"num_neighbors": [2], "input_nodes": ("paper", torch.ones(3, dtype=torch.bool))}, "one entry per paper node"),
        ({"num_neighbors": [2], "input_nodes": ("paper", torch.tensor([60]))}, r"in \[0, 60\)"),
        ({"num_neighbors": [2], "input_nodes": "paper", "disjoint": True}, "not supported on heterogeneous"),
        ({"num_neighbors": {CITES: [2], WRITES: [-2]}, "input_nodes": "paper"}, "integers >= -1"),
    ],
)
def test_bad_heterogeneous_arguments_are_named(options, message):
    with pytest.raises(UsageError, match=message):
        DistributedGraphLoader(graph(), **options)


def test_fanouts_per_edge_type_fill_missing_types_and_hops_with_zero():
    meta = HeteroMeta(
        node_types=[NodeType(name="a", count=2, feature_dim=1), NodeType(name="b", count=1, feature_dim=0)],
        edge_types=[EdgeType(src="a", rel="r", dst="b", count=1), EdgeType(src="b", rel="s", dst="a", count=2)],
    )
    layout = HeteroLayout(meta)
    assert layout.fanouts({("b", "s", "a"): [4, 2, 1]}) == [[0, 4], [0, 2], [0, 1]]
    assert layout.fanouts([5, -1]) == [[5, 5], [-1, -1]]
    assert hop_bounds(np.array([[0, 4], [-1, 2], [0, 0]])) == [4, -1, 1]


def test_a_reordered_heterogeneous_dataset_gives_the_original_batches(tmp_path):
    from remotegnn.convert.pyg import from_pyg
    from remotegnn.store import GraphDataset
    from remotegnn.store.reorder import reorder

    data = graph()
    original = from_pyg(data, tmp_path / "hetero").path
    moved = reorder(GraphDataset.open(original), tmp_path / "degree", "degree", progress=False).path
    fanouts = {CITES: [3, 2], WRITES: [2, 1], WRITTEN_BY: [0, 2]}
    assert GraphDataset.open(moved).user_ids.tolist() != list(range(85))  # the rows did move
    seeds = ("paper", data["paper"].train_mask)
    mine, theirs = (batches(path, fanouts, input_nodes=seeds) for path in (original, moved))
    for a, b in zip(mine, theirs, strict=True):
        for key in a.node_types + a.edge_types:
            for field, value in a[key].items():
                assert torch.equal(b[key][field], value) if torch.is_tensor(value) else b[key][field] == value
