"""SliceGCN's modules, and the decisions where the paper is unclear or inconsistent.

- **Per-slice GCN (Eq. 6)**: layer l maps h to ``ReLU(b + Â h W_agg) + h W_self``, Â the
  symmetric normalisation 1/sqrt(d_u d_v) of the graph with a self loop per node (as GCN's).
  Every layer, the last included, has this form; dropout acts on the input of layers 2..L.
- **Widths**: "hidden" is the model's total width. Each of p slices gets ceil(hidden / p), so the
  concatenation is about as wide as one GCN's hidden layer and the parameters fall with p, as the
  paper's Table III reports (its absolute counts match none of Table II's widths: not reproduced).
- **Baseline GCN** = the same network with p = 1 (one slice holding every column), no slice
  encoding, no fusion: the comparison changes only the slicing.
- **Slice encoding (Eq. 7)**: a learnable p x width matrix E; slice i's output gets row i (the
  paper writes E_{1,:} for every slice, which would be one shared bias: read as E_{i,:}).
- **Feature fusion (Eq. 4, Algorithm 3)**: a two-layer MLP from all d' columns (hidden d') to
  p x s columns, s the slice width, cut into p slices, one per rank (the paper's W_FF shape
  d x (ceil(d'/p) + 1) and "out_size = slice_size" would give every rank the same columns: read
  as one projection per rank). It runs on the learner, which holds the full features.
- **Classifier (Eq. 9)**: Linear(p x width, hidden), ReLU, dropout, Linear(hidden, classes).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from fullgraph.dropout import dropout
from remotegnn.store import GraphDataset


def slice_width(hidden: int, parts: int) -> int:
    return math.ceil(hidden / parts)


@dataclass(frozen=True)
class Adjacency:
    """Â = D^-1/2 (A + I) D^-1/2 (rows = targets: in-edges, as the CSC holds) and its transpose,
    both CSR: the backward pass multiplies by Âᵀ, and torch's own sparse backward (which
    transposes on every call) took three times the forward's time on Tolokers."""

    forward: Tensor
    transpose: Tensor

    @classmethod
    def of(cls, dataset: GraphDataset) -> Adjacency:
        indptr, indices, _ = dataset.csc
        n = dataset.meta.num_nodes
        counts = np.diff(np.asarray(indptr))
        degree = counts.astype(np.float64) + 1.0
        loops = np.arange(n, dtype=np.int64)
        rows = np.concatenate([np.repeat(loops, counts), loops])
        cols = np.concatenate([np.asarray(indices, dtype=np.int64), loops])
        values = torch.from_numpy((1.0 / np.sqrt(degree[rows] * degree[cols])).astype(np.float32))
        coo = torch.sparse_coo_tensor(torch.from_numpy(np.stack([rows, cols])), values, (n, n), check_invariants=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            return cls(coo.coalesce().to_sparse_csr(), coo.t().coalesce().to_sparse_csr())

    def to(self, device: torch.device | str) -> Adjacency:
        return Adjacency(self.forward.to(device), self.transpose.to(device))

    def __matmul__(self, h: Tensor) -> Tensor:
        return _Propagate.apply(self.forward, self.transpose, h)


class _Propagate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, adjacency: Tensor, transpose: Tensor, h: Tensor) -> Tensor:
        ctx.transpose = transpose
        return adjacency @ h

    @staticmethod
    def backward(ctx, grad: Tensor):
        return None, None, ctx.transpose @ grad


class SliceLayer(nn.Module):
    """Eq. 6: ReLU(b + Â h W_agg) + h W_self."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.agg = nn.Linear(in_dim, out_dim, bias=False)  # W_agg
        self.bias = nn.Parameter(torch.zeros(out_dim))  # b
        self.self_ = nn.Linear(in_dim, out_dim, bias=False)  # W_self

    def forward(self, h: Tensor, adjacency: Adjacency) -> Tensor:
        return torch.relu(adjacency @ self.agg(h) + self.bias) + self.self_(h)


class SliceBranch(nn.Module):
    """One rank's GCN over its slice: L layers of Eq. 6, all of width ``width``."""

    def __init__(self, in_dim: int, width: int, layers: int, dropout: float):
        super().__init__()
        dims = [in_dim] + [width] * layers
        self.layers = nn.ModuleList(SliceLayer(dims[i], dims[i + 1]) for i in range(layers))
        self.dropout = dropout

    def forward(self, x: Tensor, adjacency: Adjacency, generator: torch.Generator) -> Tensor:
        h = x
        for i, layer in enumerate(self.layers):
            if i:
                h = dropout(h, self.dropout, self.training, generator)
            h = layer(h, adjacency)
        return h


class Head(nn.Module):
    """The learner's part: slice encoding (optional) and the classifier over the concatenation."""

    def __init__(self, parts: int, width: int, hidden: int, classes: int, dropout: float, encoding: bool):
        super().__init__()
        self.encoding = nn.Parameter(torch.zeros(parts, width)) if encoding else None
        self.hidden = nn.Linear(parts * width, hidden)
        self.out = nn.Linear(hidden, classes)
        self.dropout = dropout

    def forward(self, outputs: list[Tensor], generator: torch.Generator) -> Tensor:
        if self.encoding is not None:
            outputs = [h + self.encoding[i] for i, h in enumerate(outputs)]
        h = torch.cat(outputs, dim=1)
        h = dropout(h, self.dropout, self.training, generator)
        h = dropout(torch.relu(self.hidden(h)), self.dropout, self.training, generator)
        return self.out(h)


class FeatureFusion(nn.Module):
    """Eq. 4 as Algorithm 3 builds it: a two-layer MLP from all columns to p slices of ``width``."""

    def __init__(self, in_dim: int, parts: int, width: int):
        super().__init__()
        self.parts, self.width = parts, width
        self.mlp = nn.Sequential(nn.Linear(in_dim, in_dim), nn.ReLU(), nn.Linear(in_dim, parts * width))

    def forward(self, x: Tensor) -> list[Tensor]:
        return list(self.mlp(x).split(self.width, dim=1))
