"""Sizes and work of the full-graph models (GCN, GraphSAGE, GAT), counted without building them.

The full-graph cost model needs three figures per layer: its parameters (gradient averaging moves
them every round), the width of its output rows (the boundary exchange moves them) and its
floating-point work on a partition. The parameter counts are those of PyG's GCNConv, SAGEConv
and GATConv as the full-graph trainer builds them (``fullgraph.retexo.models``; the tests compare
the two for each model at one to three layers), and the GPU stage's GraphSAGE is priced by them:

- GCN layer: one weight d_in x d_out and a bias.
- GraphSAGE layer: a neighbour weight with bias and a root weight without, both d_in x d_out.
- GAT layer: a weight d_in x (heads * c) without bias, two attention vectors and a bias of
  heads * c, with c = d_out // heads on hidden layers (heads concatenated) and one head of d_out
  on the last.
- RETEXO's temporary classifier of hidden layer m: one linear layer d_m x classes with bias.

Work is split in two because a CPU does them at very different rates: dense (the layers' matrix
products, compute-bound) and sparse (aggregating rows along edges, memory-bound). A multiply-add
counts as two operations in both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np

from contracts.workload import GnnName

Amount: TypeAlias = float | np.ndarray  # one figure, or one per candidate cluster
# GAT's attention per edge and head: the two logits' sum, LeakyReLU, the softmax's exp, max and
# normalisation, and the weighting of the message (about ten operations).
GAT_EDGE_OPS_PER_HEAD: Final = 10


def _heads(heads: int, last: bool) -> int:
    return 1 if last else heads


def layer_parameters(gnn: GnnName, d_in: int, d_out: int, heads: int, last: bool) -> int:
    if gnn == "gcn":
        return d_in * d_out + d_out
    if gnn == "sage":
        return 2 * d_in * d_out + d_out
    h = _heads(heads, last)
    width = h * (d_out // h)
    return d_in * width + 2 * width + width


def model_parameters(gnn: GnnName, dims: list[int], heads: int) -> int:
    """M of the RETEXO paper's Eq. 2, in parameters: every message-passing layer."""
    last = len(dims) - 2
    return sum(layer_parameters(gnn, dims[m], dims[m + 1], heads, m == last) for m in range(len(dims) - 1))


def classifier_parameters(dims: list[int]) -> list[int]:
    """C_1 .. C_{K-1}: RETEXO's temporary classifier of each hidden layer."""
    classes = dims[-1]
    return [d * classes + classes for d in dims[1:-1]]


@dataclass(frozen=True)
class Work:
    """Floating-point operations of one forward pass, split by the rate a CPU does them at."""

    dense: Amount
    sparse: Amount

    def __add__(self, other: Work) -> Work:
        return Work(self.dense + other.dense, self.sparse + other.sparse)

    def scaled(self, factor: float) -> Work:
        return Work(self.dense * factor, self.sparse * factor)


def layer_forward(
    gnn: GnnName, d_in: Amount, d_out: Amount, heads: int, last: bool, *, inner: Amount, halo: Amount, edges: Amount
) -> Work:
    """One layer's forward pass on a partition of ``inner`` nodes, ``halo`` remote rows and the
    ``edges`` into its inner nodes. GCN and GAT transform every row (halo rows included) before
    aggregating the transformed rows; GraphSAGE aggregates the input rows, then transforms its
    inner nodes twice (neighbour mean and root). Widths may be arrays, one per cluster: SliceGCN's
    narrow with its workers."""
    if gnn == "sage":
        return Work(dense=2 * 2 * inner * d_in * d_out, sparse=2 * edges * d_in)
    dense = 2 * (inner + halo) * d_in * d_out
    sparse = 2 * edges * d_out
    if gnn == "gat":
        sparse += edges * _heads(heads, last) * GAT_EDGE_OPS_PER_HEAD
    return Work(dense=dense, sparse=sparse)


def cached_forward(gnn: GnnName, d_in: Amount, d_out: Amount, *, inner: Amount) -> Work | None:
    """A layer's forward pass fed its input's neighbour aggregate, computed once for all the rounds
    of a RETEXO layer (whose input is frozen): the products on the inner nodes only (GraphSAGE's
    two, GCN's one), no aggregation. None for GAT, whose aggregate depends on its weights. The one
    aggregation per layer is left out: the rounds' passes dwarf it."""
    if gnn == "gat":
        return None
    products = 2 if gnn == "sage" else 1
    return Work(dense=products * 2 * inner * d_in * d_out, sparse=0.0)


def classifier_forward(d_in: Amount, classes: Amount, inner: Amount) -> Work:
    return Work(dense=2 * inner * d_in * classes, sparse=0.0)


def round_work(gnn: GnnName, forward: Work, *, input_gradient: bool, validation: Work | None = None) -> Work:
    """One training round of a layer whose forward pass is ``forward``: the forward pass, the
    validation forward pass (``validation`` where it differs: on a cached aggregate), the weights'
    gradients (the products again; GCN and GAT aggregate after their product, so its gradient goes
    back through the aggregation too), and, only when its input is trained (not frozen features or
    a frozen layer), the input's gradient (both again)."""
    weights = Work(forward.dense, 0.0 if gnn == "sage" else forward.sparse)
    work = forward + (validation or forward) + weights
    return work + forward if input_gradient else work
