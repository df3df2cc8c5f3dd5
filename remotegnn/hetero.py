"""Heterogeneous graphs on the learner: PyG's per-type view of a dataset stored in one id space.

A heterogeneous dataset keeps every node type's nodes at consecutive ids and every edge type's
edges at consecutive edge ids (``remotegnn.convert.pyg_hetero``), so the memory server samples
and gathers exactly as for one type, with fanouts per edge type, and the batches cross the
network as they always do. ``HeteroLayout`` turns PyG's arguments (fanouts per edge type,
``input_nodes=(type, nodes)``) into that id space, and a sampled batch back into a ``HeteroData``
with PyG's fields: per node type ``n_id``, ``x`` (its own columns), ``y``, masks and per-hop
``num_sampled_nodes``; per edge type ``edge_index``, ``e_id`` and ``num_sampled_edges``; and on the
input type ``input_id`` and ``batch_size``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData

from contracts.dataset import HeteroMeta
from foundation.errors import UsageError


class HeteroLayout:
    """A heterogeneous dataset's types: how PyG's per-type ids map to the stored ids and back."""

    def __init__(self, meta: HeteroMeta):
        self.meta = meta
        self.node_names = [t.name for t in meta.node_types]
        self.edge_keys = [t.key for t in meta.edge_types]
        self.node_offsets = torch.tensor(meta.node_offsets, dtype=torch.long)
        self.edge_offsets = torch.tensor(meta.edge_offsets, dtype=torch.long)

    # -- arguments --------------------------------------------------------------------------------
    def fanouts(self, num_neighbors) -> list[list[int]]:
        """[hops][edge types]: one list for every edge type, or PyG's dict per edge type (types it
        leaves out, and hops beyond a shorter list, get 0: not sampled)."""
        if not isinstance(num_neighbors, Mapping):
            return [[int(f)] * len(self.edge_keys) for f in num_neighbors]
        unknown = [key for key in num_neighbors if tuple(key) not in self.edge_keys]
        if unknown:
            raise UsageError(
                f"num_neighbors: {unknown[0]!r} is not an edge type of this graph; its edge types are "
                + ", ".join(map(str, self.edge_keys))
            )
        hops = max(len(v) for v in num_neighbors.values())
        lists = {tuple(k): list(v) + [0] * (hops - len(v)) for k, v in num_neighbors.items()}
        return [[int(lists.get(key, [0] * hops)[h]) for key in self.edge_keys] for h in range(hops)]

    def seeds(self, input_nodes, splits: dict[str, np.ndarray]) -> tuple[str, np.ndarray, np.ndarray]:
        """(input type, stored ids, ``input_id``) for ``input_nodes``: a node type, or (type,
        None | ids | mask); ``input_id`` is the position for ids, the type's own id for a mask."""
        if isinstance(input_nodes, str):
            input_nodes = (input_nodes, None)
        if not isinstance(input_nodes, tuple) or len(input_nodes) != 2:
            raise UsageError(
                "input_nodes: on a heterogeneous graph give a node type, or (node type, ids or mask), "
                f"e.g. ('{self.node_names[0]}', train_mask)"
            )
        name, nodes = input_nodes
        try:
            t = self.meta.node_type(name)
        except ValueError as exc:
            raise UsageError(f"input_nodes: {exc}") from None
        count, offset = self.meta.node_types[t].count, int(self.node_offsets[t])
        if nodes is None:
            ids = np.arange(count, dtype=np.int64)
            return name, ids + offset, ids
        values = nodes.numpy() if isinstance(nodes, torch.Tensor) else np.asarray(nodes)
        if values.dtype == np.bool_:
            if values.shape != (count,):
                raise UsageError(f"input_nodes: a mask of {name} must have one entry per {name} node ({count})")
            ids = np.flatnonzero(values).astype(np.int64)
            return name, ids + offset, ids
        if (
            values.ndim != 1
            or values.dtype.kind not in "iu"
            or (len(values) and (values.min() < 0 or values.max() >= count))
        ):
            raise UsageError(f"input_nodes: ids of {name} must be a 1-D integer tensor in [0, {count})")
        return name, values.astype(np.int64) + offset, np.arange(len(values), dtype=np.int64)

    def id_range(self, node_type: str) -> tuple[int, int]:
        """The stored ids of ``node_type``'s nodes: [first, last + 1)."""
        t = self.meta.node_type(node_type)
        return int(self.node_offsets[t]), int(self.node_offsets[t + 1])

    # -- batches ----------------------------------------------------------------------------------
    def split(self, batch: Data, input_type: str | None) -> HeteroData:
        """A sampled batch in the stored id space as PyG's ``HeteroData`` batch (``input_type``:
        the node type seeds were given for; a link batch has none)."""
        device = batch.n_id.device
        n_id, e_id = batch.n_id, batch.e_id
        node_type = torch.searchsorted(self.node_offsets[1:].to(device), n_id, right=True)
        edge_type = torch.searchsorted(self.edge_offsets[1:].to(device), e_id, right=True)
        hop_of_node = _hops(batch, "num_sampled_nodes", len(n_id), device)
        hop_of_edge = _hops(batch, "num_sampled_edges", len(e_id), device)
        position = torch.empty_like(n_id)  # each node's index among its own type's nodes
        out = HeteroData()
        for t, (name, meta) in enumerate(zip(self.node_names, self.meta.node_types, strict=True)):
            rows = (node_type == t).nonzero().view(-1)
            position[rows] = torch.arange(len(rows), device=device)
            store = out[name]
            store.n_id = n_id[rows] - self.node_offsets[t]
            if meta.feature_dim:
                store.x = batch.x[rows, : meta.feature_dim]
            if meta.labelled and "y" in batch:
                store.y = batch.y[rows]
            for split in meta.splits:
                if f"{split}_mask" in batch:
                    store[f"{split}_mask"] = batch[f"{split}_mask"][rows]
            if hop_of_node is not None:
                store.num_sampled_nodes = torch.bincount(
                    hop_of_node[rows], minlength=len(batch.num_sampled_nodes)
                ).tolist()
        for r, key in enumerate(self.edge_keys):
            columns = (edge_type == r).nonzero().view(-1)
            edges = batch.edge_index[:, columns]
            store = out[key]
            store.edge_index = torch.stack([position[edges[0]], position[edges[1]]])
            store.e_id = e_id[columns] - self.edge_offsets[r]
            if hop_of_edge is not None:
                store.num_sampled_edges = torch.bincount(
                    hop_of_edge[columns], minlength=len(batch.num_sampled_edges)
                ).tolist()
        if input_type is not None:
            out[input_type].input_id = batch.input_id
            out[input_type].batch_size = batch.batch_size
        return out

    def within_type(self, seeds: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Rows of a batch's (sorted) seeds as positions among their own type's nodes, where
        ``split`` puts them: a type's seeds come first among its nodes, in row order."""
        offsets = self.node_offsets.numpy()
        types = np.searchsorted(offsets[1:], seeds, side="right")
        first = np.searchsorted(types, np.arange(len(offsets) - 1))  # each type's first seed row
        return rows - first[types[rows]]


def hop_bounds(per_type: np.ndarray) -> list[int]:
    """Per hop, the most in-edges one target can contribute (the sum over its edge types; -1 for
    all): what the pipeline sizes its buffers by."""
    return [-1 if (row < 0).any() else max(1, int(row.sum())) for row in per_type]


def _hops(batch: Data, counts: str, total: int, device) -> torch.Tensor | None:
    """Each node's (or edge's) hop, from the batch's per-hop counts (None when it has none)."""
    if counts not in batch:
        return None
    per_hop = torch.tensor(batch[counts], device=device)
    return torch.repeat_interleave(torch.arange(len(per_hop), device=device), per_hop, output_size=total)
