"""fullgraph.retexo.models: a layer fed its cached neighbour aggregate computes what it would alone."""

from __future__ import annotations

import pytest
import torch

from fullgraph.part import load_part
from fullgraph.partitioner import open_partition
from fullgraph.retexo.models import GraphLayer, local_graph


@pytest.fixture(scope="module")
def part(partitions):
    path = partitions["random3"]
    return load_part(path, 0, open_partition(path))


def _layer(model: str, in_dim: int) -> GraphLayer:
    torch.manual_seed(0)
    return GraphLayer(model, in_dim, 16, heads=2, last=False)  # type: ignore[arg-type]  # a ModelName


def test_sage_with_its_aggregate_is_bit_identical(part):
    layer, graph = _layer("sage", part.x.shape[1]), local_graph(part, "sage")
    x = torch.randn(part.local, part.x.shape[1])
    aggregate = layer.aggregate(x, graph)
    assert aggregate is not None and aggregate.shape == (part.inner, part.x.shape[1])
    assert torch.equal(layer(x, graph, aggregate), layer(x, graph))


def test_gcn_with_its_aggregate_differs_by_rounding_only(part):
    layer, graph = _layer("gcn", part.x.shape[1]), local_graph(part, "gcn")
    x = torch.randn(part.local, part.x.shape[1])
    cached, direct = layer(x, graph, layer.aggregate(x, graph)), layer(x, graph)
    assert torch.allclose(cached, direct, atol=1e-5)
    assert not torch.allclose(cached, layer(x * 1.01, graph), atol=1e-5)  # the check can tell inputs apart


def test_the_aggregate_carries_no_gradient_and_gat_has_none(part):
    x = torch.randn(part.local, part.x.shape[1], requires_grad=True)
    aggregate = _layer("sage", part.x.shape[1]).aggregate(x, local_graph(part, "sage"))
    assert aggregate is not None and not aggregate.requires_grad
    assert _layer("gat", part.x.shape[1]).aggregate(x, local_graph(part, "gat")) is None
