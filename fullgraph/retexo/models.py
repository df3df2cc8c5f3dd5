"""GCN, GraphSAGE and GAT layers over a worker's local graph (PyG's convolutions).

A layer reads the representations of every local node (inner and halo) and writes those of
the inner nodes, whose in-edges the part holds in full, so each worker computes exactly the
full graph's layer for its own nodes. Decisions, the same for standard training and RETEXO:

- GCN uses the full graph's normalisation 1/sqrt(d_u d_v), d = stored in-degree + 1 (a self
  loop per node), from the in-degrees the partition ships, so a partitioned GCN equals the
  unpartitioned one; GAT attends over in-neighbours plus a self loop; GraphSAGE is PyG's mean
  aggregator with a root weight.
- Hidden layers are conv -> ReLU; dropout is applied to every layer's input. GAT's hidden width
  is split over ``heads`` heads (concatenated); its last layer has one head.
- RETEXO's temporary classifier for a hidden layer m is one Linear(H_m, classes) on the layer's
  ReLU output (after dropout): the C_m of the paper's Eq. 2.
- Dropout draws from a per-worker generator, so runs are reproducible in threads and MPI alike.
- A layer's **neighbour aggregate** can be computed apart (:meth:`GraphLayer.aggregate`) and
  passed back in: where the input is frozen (a RETEXO layer) and no dropout touches it, the
  aggregate is the same every round, so it is computed once. GCN and GraphSAGE aggregate before
  any weight is applied (GCN's Â(XW) = (ÂX)W), so their aggregate is weight-free; GAT's attention
  coefficients depend on its weights, so it has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

from fullgraph.part import WorkerPart
from fullgraph.retexo.config import WEIGHT_FREE_AGGREGATE, ModelName


@dataclass
class LocalGraph:
    edge_index: Tensor  # [2, E] local ids; targets are inner nodes
    edge_weight: Tensor | None  # GCN's normalisation, else None
    inner: int
    local: int


def local_graph(part: WorkerPart, model: ModelName) -> LocalGraph:
    """The edges a layer of ``model`` aggregates over on this part."""
    edge_index, weight = part.edge_index, None
    if model in ("gcn", "gat"):
        loops = torch.arange(part.inner, dtype=edge_index.dtype).repeat(2, 1)
        edge_index = torch.cat([edge_index, loops], dim=1)
    if model == "gcn":
        d = part.in_degree + 1.0
        weight = (d[edge_index[0]] * d[edge_index[1]]).rsqrt()
    return LocalGraph(edge_index, weight, part.inner, part.local)


class GraphLayer(nn.Module):
    """One message-passing layer: representations of all local nodes -> the inner nodes'."""

    def __init__(self, model: ModelName, in_dim: int, out_dim: int, heads: int, last: bool):
        super().__init__()
        self.model = model
        self.conv: Any  # a PyG convolution (GCNConv, SAGEConv or GATConv); PyG has no type information
        if model == "gcn":
            self.conv = GCNConv(in_dim, out_dim, normalize=False, add_self_loops=False)
        elif model == "sage":
            self.conv = SAGEConv(in_dim, out_dim)
        elif model == "gat":
            heads = 1 if last else heads
            self.conv = GATConv(in_dim, out_dim // heads, heads=heads, concat=not last, add_self_loops=False)
        else:
            raise ValueError(f"unknown model {model!r}")

    def forward(self, x: Tensor, graph: LocalGraph, aggregate: Tensor | None = None) -> Tensor:
        """The inner nodes' output; with ``aggregate`` (what :meth:`aggregate` returned for this
        ``x``) the neighbour sum is not computed again. GraphSAGE's result is then bit-identical
        (PyG aggregates first too); GCN's applies its weights after the sum instead of before,
        equal up to float rounding."""
        if aggregate is not None:
            if self.model == "gcn":
                out = self.conv.lin(aggregate)
                return out if self.conv.bias is None else out + self.conv.bias
            return self.conv.lin_l(aggregate) + self.conv.lin_r(x[: graph.inner])
        if self.model == "gcn":
            return self.conv(x, graph.edge_index, graph.edge_weight)[: graph.inner]
        size = (graph.local, graph.inner)
        return self.conv((x, x[: graph.inner]), graph.edge_index, size=size)

    @torch.no_grad()
    def aggregate(self, x: Tensor, graph: LocalGraph) -> Tensor | None:
        """The inner nodes' neighbour aggregate of ``x`` (GCN: the normalised sum; GraphSAGE:
        the mean), which no weight enters; None for GAT, whose aggregate does."""
        if self.model not in WEIGHT_FREE_AGGREGATE:
            return None
        if self.model == "gcn":
            return self.conv.propagate(graph.edge_index, x=x, edge_weight=graph.edge_weight)[: graph.inner]
        return self.conv.propagate(graph.edge_index, x=(x, x[: graph.inner]), size=(graph.local, graph.inner))


def build_layers(model: ModelName, dims: list[int], heads: int) -> nn.ModuleList:
    last = len(dims) - 2
    return nn.ModuleList(GraphLayer(model, dims[m], dims[m + 1], heads, m == last) for m in range(len(dims) - 1))


def build_heads(dims: list[int]) -> nn.ModuleList:
    """RETEXO's temporary classifiers, one per hidden layer (C_m = H_m x H_K + H_K)."""
    return nn.ModuleList(nn.Linear(dims[m], dims[-1]) for m in range(1, len(dims) - 1))


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def flatten(params: list[nn.Parameter], grads: bool = False) -> Tensor:
    """Parameters (or their gradients, zeros where none) as one float32 vector."""
    parts = []
    for p in params:
        value = p.grad if grads else p.data
        parts.append(torch.zeros_like(p).reshape(-1) if value is None else value.reshape(-1))
    return torch.cat(parts).contiguous()


def assign(params: list[nn.Parameter], flat: Tensor, grads: bool = False) -> None:
    """Load a vector made by ``flatten`` back into the parameters (or their gradients)."""
    offset = 0
    for p in params:
        value = flat[offset : offset + p.numel()].view_as(p)
        if grads:
            p.grad = value.clone()
        else:
            p.data.copy_(value)
        offset += p.numel()
