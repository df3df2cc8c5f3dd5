"""seed_forward: the seeds' scores and gradients of the whole forward pass, block by block."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import GCN, GraphSAGE

from remotegnn.blocks import seed_forward
from remotegnn.loader import DistributedGraphLoader
from tests.remotegnn.test_loader import FAST


@pytest.fixture(scope="module")
def batches(rmat):
    with DistributedGraphLoader(
        rmat.path, [5, 4, 3], input_nodes="train", batch_size=64, seed=0, zero_copy=False, **FAST
    ) as loader:
        return list(loader)[:3]


def _whole(model, batch) -> torch.Tensor:
    return model(batch.x, batch.edge_index)[: batch.batch_size]


def _trimmed(model, batch) -> torch.Tensor:
    hops = {"num_sampled_nodes_per_hop": batch.num_sampled_nodes, "num_sampled_edges_per_hop": batch.num_sampled_edges}
    return model(batch.x, batch.edge_index, **hops)[: batch.batch_size]


@pytest.mark.parametrize(
    ("make", "reference"), [(GraphSAGE, _whole), (GCN, _trimmed)], ids=["graphsage-blocks", "gcn-pyg-trimmed"]
)
def test_scores_and_gradients_are_the_reference_forward_pass(rmat, batches, make, reference):
    torch.manual_seed(0)
    model = make(rmat.meta.feature_dim, 16, num_layers=3, out_channels=4, dropout=0.0)
    for batch in batches:
        assert batch.num_sampled_nodes[-1] > 0
        scores = seed_forward(model, batch)
        torch.testing.assert_close(scores, reference(model, batch), rtol=1e-5, atol=1e-6)
        scores.sum().backward()
        mine = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        reference(model, batch).sum().backward()
        for a, b in zip(mine, (p.grad for p in model.parameters()), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
        model.zero_grad()


def test_a_batch_without_hop_counts_or_a_model_deeper_than_its_hops_runs_whole(rmat, batches):
    torch.manual_seed(0)
    deeper = GraphSAGE(rmat.meta.feature_dim, 16, num_layers=4, out_channels=4).eval()
    batch = batches[0]
    torch.testing.assert_close(seed_forward(deeper, batch), _whole(deeper, batch))
    plain = batch.clone()
    del plain.num_sampled_nodes, plain.num_sampled_edges
    shallow = GraphSAGE(rmat.meta.feature_dim, 16, num_layers=3, out_channels=4).eval()
    torch.testing.assert_close(seed_forward(shallow, plain), _whole(shallow, plain))
