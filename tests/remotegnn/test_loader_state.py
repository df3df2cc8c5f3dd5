"""Resuming a loader: stop part-way through a shuffled epoch, build a fresh loader from
``state_dict()``, and what it yields completes exactly one uninterrupted epoch, in order (node,
link and heterogeneous loaders over the real local pipeline); a state of another loader is refused."""

from __future__ import annotations

import json

import pytest
import torch
from torch_geometric.data import Data, HeteroData

from foundation.errors import UsageError
from remotegnn.link_loader import DistributedLinkLoader
from remotegnn.loader import DistributedGraphLoader
from tests.remotegnn.test_hetero import graph as hetero_graph
from tests.remotegnn.test_link_loader import graph as link_graph
from tests.remotegnn.test_loader import FAST


def node_loader(rmat, **options) -> DistributedGraphLoader:
    args = dict(input_nodes="train", batch_size=40, shuffle=True, seed=5, zero_copy=False) | FAST | options
    return DistributedGraphLoader(rmat.path, [4, 3], **args)


def link_loader(**options) -> DistributedLinkLoader:
    args = dict(batch_size=50, shuffle=True, seed=1, zero_copy=False, neg_sampling_ratio=1.0) | FAST | options
    return DistributedLinkLoader(link_graph(), [4, 2], **args)


def hetero_loader(**options) -> DistributedGraphLoader:
    args = dict(input_nodes="paper", batch_size=8, shuffle=True, seed=2, zero_copy=False) | FAST | options
    return DistributedGraphLoader(hetero_graph(), [3, 2], **args)


def key(batch: Data | HeteroData) -> tuple:
    """What tells batches apart: their nodes, edges and features (per type on a heterogeneous graph)."""
    if isinstance(batch, HeteroData):
        return tuple(
            (str(t), batch[t].n_id.tolist(), batch[t].x.sum().item()) for t in batch.node_types if "n_id" in batch[t]
        )
    label = batch.edge_label_index.tolist() if "edge_label_index" in batch else None
    return batch.n_id.tolist(), batch.edge_index.tolist(), batch.x.sum().item(), label


def resumed_epoch(make, stop_after: int, epochs_before: int = 1) -> tuple[list[tuple], list[tuple]]:
    """(epoch ``epochs_before`` read whole by one loader, the same epoch read by a loader that stops
    after ``stop_after`` batches plus a fresh one restored from its state, through JSON)."""
    with make() as whole:
        for _ in range(epochs_before):
            list(whole)
        expected = [key(b) for b in whole]
    with make() as first:
        for _ in range(epochs_before):
            list(first)
        got = []
        for batch in first:
            got.append(key(batch))
            if len(got) == stop_after:
                state = json.loads(json.dumps(first.state_dict()))
                break
    assert state["epoch"] == epochs_before and state["batches_yielded"] == stop_after
    with make() as second:
        second.load_state_dict(state)
        got += [key(b) for b in second]
        after = second.state_dict()
    assert (after["epoch"], after["batches_yielded"]) == (epochs_before + 1, 0)
    return expected, got


def test_a_resumed_node_epoch_is_the_uninterrupted_epoch(rmat):
    expected, got = resumed_epoch(lambda: node_loader(rmat), stop_after=3)
    assert len(expected) > 4 and got == expected


def test_a_resumed_link_epoch_is_the_uninterrupted_epoch():
    expected, got = resumed_epoch(link_loader, stop_after=5)
    assert len(expected) > 6 and got == expected


def test_a_resumed_heterogeneous_epoch_is_the_uninterrupted_epoch():
    expected, got = resumed_epoch(hetero_loader, stop_after=2, epochs_before=0)
    assert len(expected) > 3 and got == expected


def test_a_state_taken_after_the_last_batch_resumes_at_the_next_epoch(rmat):
    with node_loader(rmat) as loader:
        for _ in loader:
            state = loader.state_dict()  # the last one is taken after the epoch's last batch
        second_epoch = [key(b) for b in loader]
    assert (state["epoch"], state["batches_yielded"]) == (0, state["num_batches"])
    with node_loader(rmat) as fresh:
        fresh.load_state_dict(state)
        assert [key(b) for b in fresh] == second_epoch


def test_an_abandoned_epoch_resumes_where_the_loader_would_go_on(rmat):
    with node_loader(rmat) as loader:
        next(iter(loader))  # the epoch is dropped: this loader's next epoch is epoch 1
        state = loader.state_dict()
    assert (state["epoch"], state["batches_yielded"]) == (1, 0)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (dict(seed=6), "seed (saved 5, this loader 6)"),
        (dict(batch_size=30), "batch_size"),
        (dict(input_nodes=torch.arange(0, 400, 2)), "items"),
    ],
)
def test_a_state_of_another_loader_is_refused_naming_what_differs(rmat, change, named):
    with node_loader(rmat) as loader:
        state = loader.state_dict()
    with (
        node_loader(rmat, **change) as other,
        pytest.raises(UsageError, match=named.replace("(", r"\(").replace(")", r"\)")),
    ):
        other.load_state_dict(state)


@pytest.mark.parametrize(
    ("broken", "named"),
    [({"batches_yielded": -1}, "batches_yielded"), ({"kind": "something"}, "kind"), ({"epoch": "x"}, "epoch")],
)
def test_a_broken_state_is_refused_naming_the_field(rmat, broken, named):
    with node_loader(rmat) as loader:
        state = loader.state_dict() | broken
        with pytest.raises(UsageError, match=named):
            loader.load_state_dict(state)
