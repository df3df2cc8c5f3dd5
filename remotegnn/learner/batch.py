"""Build the PyG batch from a batch's tensors on the device: the fields ``NeighborLoader`` gives
(``batch_size``, per-hop counts, ``batch`` for disjoint trees, bidirectional edges), node
attributes sliced by ``n_id``, a heterogeneous graph's split into types, the transform last."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.sampler.utils import to_bidirectional

from remotegnn import wire
from remotegnn.hetero import HeteroLayout


def tree_of_each_node(edge_index: torch.Tensor, seeds: int, nodes: int, hop_edges: list[int]) -> torch.Tensor:
    """Disjoint batches' ``batch``: each node's seed index. A node of hop h + 1 is in the tree of
    the hop-h target it was sampled for, and every edge stays inside one tree, so one pass per
    hop propagates the seeds' indices (nothing extra crosses the network)."""
    tree = torch.empty(nodes, dtype=torch.long, device=edge_index.device)
    tree[:seeds] = torch.arange(seeds, device=edge_index.device)
    start = 0
    for count in hop_edges:
        hop = edge_index[:, start : start + count]
        tree[hop[0]] = tree[hop[1]]
        start += count
    return tree


@dataclass
class BatchBuilder:
    """What turns tensors into a loader's batch: its sampling choices and the attributes it adds.

    ``node_attrs`` are node-level tensors on the device the frame does not carry (split masks, a
    Data's extras), sliced by ``n_id``; ``source`` a Data whose edge attributes are sliced by
    ``e_id``; ``user_ids`` a reordered dataset's user id of each stored node; ``decorate`` adds what
    a batch carries beyond a node batch (a link loader's labelled edges)."""

    device: torch.device
    feature_dtype: torch.dtype
    keep_wire_dtype: bool
    disjoint: bool
    bidirectional: bool
    node_attrs: dict[str, torch.Tensor]
    source: Data | None
    user_ids: torch.Tensor | None
    hetero: HeteroLayout | None
    input_type: str | None
    transform: Callable[[Data], Data] | None
    decorate: Callable[[Data | HeteroData, int], None]

    def build(self, tensors: dict[str, torch.Tensor], frame: wire.Frame, index: int) -> Data | HeteroData:
        if not self.keep_wire_dtype and tensors["x"].dtype != self.feature_dtype:
            tensors["x"] = tensors["x"].to(self.feature_dtype)  # exact: every wire dtype widens to it
        batch = Data(**tensors)
        batch.batch_size = int(frame["input_id"].shape[0])
        hop_nodes, hop_edges = frame["num_sampled_nodes"].tolist(), frame["num_sampled_edges"].tolist()
        if self.disjoint:
            batch.batch = tree_of_each_node(batch.edge_index, batch.batch_size, len(batch.n_id), hop_edges)
        if self.bidirectional:  # PyG's own helper; it drops the per-hop counts too
            row, col, batch.e_id = to_bidirectional(*batch.edge_index, *batch.edge_index, batch.e_id, batch.e_id)
            batch.edge_index = torch.stack([row, col])
        else:
            batch.num_sampled_nodes, batch.num_sampled_edges = hop_nodes, hop_edges
        n_id = batch.n_id
        if self.user_ids is not None:
            n_id = batch.n_id = self.user_ids[n_id]
        for key, value in self.node_attrs.items():
            batch[key] = value[n_id]
        self._edge_attrs(batch)
        out: Data | HeteroData = batch if self.hetero is None else self.hetero.split(batch, self.input_type)
        self.decorate(out, index)
        return self.transform(out) if self.transform is not None else out

    def _edge_attrs(self, batch: Data) -> None:
        """A Data's edge attributes, sliced by ``e_id`` along the edges as PyG slices them."""
        source = self.source
        if source is None:
            return
        for key, value in source.items():
            if key != "edge_index" and source.is_edge_attr(key) and isinstance(value, torch.Tensor):
                dim = source.__cat_dim__(key, value)
                batch[key] = value.index_select(dim, batch.e_id.to(value.device)).to(self.device)
