"""DistributedLinkLoader: LinkNeighborLoader's contract over the real local pipeline."""

from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.sampler import NegativeSampling as PygNegativeSampling

from foundation.errors import UsageError
from remotegnn.link_loader import DistributedLinkLoader
from tests.remotegnn.test_loader import FAST


def graph(num_nodes: int = 200, num_edges: int = 1200, seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    return Data(
        x=torch.randn(num_nodes, 8, generator=g),
        edge_index=torch.randint(0, num_nodes, (2, num_edges), generator=g),
        y=torch.randint(0, 3, (num_nodes,), generator=g),
    )


def epoch(data: Data, **options) -> list[Data]:
    with DistributedLinkLoader(
        data, [4, 2], batch_size=50, shuffle=True, seed=1, zero_copy=False, **FAST, **options
    ) as loader:
        batches = list(loader)
        assert len(batches) == len(loader)
        return batches


def test_binary_batches_hold_the_edges_then_their_negatives():
    data = graph()
    supervision = data.edge_index[:, :300]
    batches = epoch(data, edge_label_index=supervision, neg_sampling_ratio=2.0)
    seen = torch.cat([b.input_id for b in batches])
    assert sorted(seen.tolist()) == list(range(300))  # every edge once per epoch, in a shuffled order
    assert seen.tolist() != list(range(300))
    for batch in batches:
        positives = batch.input_id.numel()
        negatives = math.ceil(2.0 * positives)
        assert batch.edge_label_index.shape == (2, positives + negatives)
        assert torch.equal(batch.edge_label, torch.cat([torch.ones(positives), torch.zeros(negatives)]))
        ends = batch.n_id[batch.edge_label_index]  # local indices -> the graph's node ids
        assert torch.equal(ends[:, :positives], supervision[:, batch.input_id])
        assert torch.equal(batch.x, data.x[batch.n_id])
        seeds = torch.unique(batch.edge_label_index)
        assert torch.equal(seeds, torch.arange(seeds.numel()))  # the endpoints are the node batch's seeds
        assert "batch_size" not in batch  # as PyG's link batches


def test_given_labels_shift_by_one_with_binary_negatives_as_pyg_does():
    data = graph()
    labels = torch.randint(0, 3, (data.num_edges,))
    for batch in epoch(data, edge_label=labels, neg_sampling="binary"):
        positives = batch.input_id.numel()
        assert torch.equal(batch.edge_label[:positives], labels[batch.input_id] + 1)
        assert (batch.edge_label[positives:] == 0).all()
    without = epoch(data, edge_label=labels)[0]  # no negatives: the labels as given
    assert torch.equal(without.edge_label, labels[without.input_id])
    assert "edge_label" not in epoch(data)[0]


def test_triplet_batches_index_source_positive_and_negatives():
    data = graph()
    negative = PygNegativeSampling("triplet", amount=3)
    for batch in epoch(data, neg_sampling=negative):
        positives = batch.input_id.numel()
        assert batch.src_index.shape == batch.dst_pos_index.shape == (positives,)
        assert batch.dst_neg_index.shape == (positives, 3)
        pairs = torch.stack([batch.n_id[batch.src_index], batch.n_id[batch.dst_pos_index]])
        assert torch.equal(pairs, data.edge_index[:, batch.input_id])
        assert "edge_label_index" not in batch


def test_disjoint_link_batches_give_every_endpoint_its_own_tree():
    data = graph()
    for batch in epoch(data, disjoint=True, neg_sampling_ratio=1.0):
        positives = batch.input_id.numel()
        ends = 2 * (positives + math.ceil(positives))
        assert torch.equal(batch.edge_label_index.flatten(), torch.arange(ends))
        assert int(batch.batch.max()) < positives  # PyG: the tree index modulo the positives
        row, col = batch.edge_index
        assert torch.equal(batch.batch[row], batch.batch[col])


@pytest.mark.parametrize(
    "options, message",
    [
        ({"neg_sampling": "ternary"}, "neg_sampling=.*give 'binary' or 'triplet'"),
        ({"neg_sampling": {"mode": "binary", "amount": -1}}, "an amount > 0"),
        ({"neg_sampling": {"mode": "triplet", "amount": 1.5}}, "whole number of negatives"),
        ({"neg_sampling": "triplet", "edge_label": torch.ones(1200)}, "leave it out with triplet"),
        ({"neg_sampling": "binary", "neg_sampling_ratio": 1.0}, "give one of them"),
        (
            {"neg_sampling": PygNegativeSampling("binary", src_weight=torch.ones(200))},
            "src_weight/dst_weight are not supported",
        ),
        ({"edge_label_index": torch.zeros(3, 4, dtype=torch.long)}, r"shape \[2, num_edges\]"),
        ({"edge_label_index": torch.tensor([[0], [200]])}, r"node ids in \[0, 200\)"),
        ({"edge_label_index": (("a", "to", "b"), torch.zeros(2, 1, dtype=torch.long))}, "needs a heterogeneous graph"),
        ({"edge_label": torch.ones(5)}, "one label per edge of edge_label_index"),
        ({"edge_label_time": torch.zeros(1200)}, "edge_label_time: temporal sampling is not supported"),
        ({"cache_bytes": 1}, r"server=ServerOptions\(cache_bytes=1\)"),
    ],
)
def test_bad_link_arguments_are_named(options, message):
    with pytest.raises(UsageError, match=message):
        DistributedLinkLoader(graph(), [2], **options)


def test_a_dataset_path_needs_its_supervision_edges(rmat):
    with pytest.raises(UsageError, match="edge_label_index: give the edges to train on"):
        DistributedLinkLoader(rmat.path, [2], **FAST)
    edges = torch.from_numpy(rmat.edge_index()[:, :100])
    with DistributedLinkLoader(rmat.path, [3], edge_label_index=edges, batch_size=40, **FAST) as loader:
        assert [b.input_id.numel() for b in loader] == [40, 40, 20]


def test_heterogeneous_link_batches_carry_pyg_fields_on_their_types():
    from tests.remotegnn.test_hetero import CITES, WRITES, graph

    data = graph()
    options = dict(batch_size=32, shuffle=True, seed=1, zero_copy=False, **FAST)
    with DistributedLinkLoader(data, [3, 2], edge_label_index=WRITES, neg_sampling_ratio=1.0, **options) as loader:
        batches = list(loader)
    assert sorted(torch.cat([b[WRITES].input_id for b in batches]).tolist()) == list(range(150))
    for batch in batches:
        store = batch[WRITES]
        positives = store.input_id.numel()
        authors, papers = (
            batch["author"].n_id[store.edge_label_index[0]],
            batch["paper"].n_id[store.edge_label_index[1]],
        )
        assert torch.equal(torch.stack([authors, papers])[:, :positives], data[WRITES].edge_index[:, store.input_id])
        assert bool((authors < 25).all() and (papers < 60).all())  # negatives drawn from the right types
        assert torch.equal(store.edge_label, torch.cat([torch.ones(positives), torch.zeros(positives)]))
    cites = data[CITES].edge_index[:, :40]
    with DistributedLinkLoader(data, [2], edge_label_index=(CITES, cites), neg_sampling="triplet", **options) as loader:
        batch = next(iter(loader))
    pairs = torch.stack(
        [batch["paper"].n_id[batch["paper"].src_index], batch["paper"].n_id[batch["paper"].dst_pos_index]]
    )
    assert torch.equal(pairs, cites[:, batch[CITES].input_id])
    assert batch["paper"].dst_neg_index.shape == (32,)


@pytest.mark.parametrize(
    "edge_label_index, message",
    [
        (None, r"give \(edge type, edges\) or an edge type"),
        (("paper", "likes", "paper"), "is not an edge type of this graph"),
        ((("author", "writes", "paper"), torch.tensor([[25], [0]])), r"author ids in \[0, 25\)"),
    ],
)
def test_bad_heterogeneous_supervision_edges_are_named(edge_label_index, message):
    from tests.remotegnn.test_hetero import graph

    with pytest.raises(UsageError, match=message):
        DistributedLinkLoader(graph(), [2], edge_label_index=edge_label_index)


def test_a_reordered_dataset_gives_the_original_link_batches(rmat, rmat_reordered):
    edges = torch.from_numpy(rmat.edge_index()[:, :300])  # the user's ids
    epochs = []
    for dataset in (rmat, rmat_reordered):
        with DistributedLinkLoader(
            dataset.path,
            [4, 2],
            edge_label_index=edges,
            neg_sampling_ratio=1.0,
            batch_size=64,
            shuffle=True,
            seed=3,
            zero_copy=False,
            **FAST,
            edge_ids=True,
        ) as loader:
            epochs.append(list(loader))
    for mine, theirs in zip(*epochs, strict=True):
        for field in ("n_id", "e_id", "edge_index", "edge_label_index", "edge_label", "input_id", "x"):
            assert torch.equal(theirs[field], mine[field]), field
