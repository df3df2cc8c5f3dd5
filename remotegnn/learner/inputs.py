"""What a loader serves: its source (a Data, a HeteroData or a dataset path), its seeds from
``input_nodes``, and the split masks its batches carry, each checked where the user gave it."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData

from foundation.errors import UsageError


def seed_ids(input_nodes, num_nodes: int, splits: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(seed node ids, what ``input_id`` reports): positions for an index, global ids for a mask."""
    if input_nodes is None:
        ids = np.arange(num_nodes, dtype=np.int64)
        return ids, ids
    if isinstance(input_nodes, str):
        if input_nodes not in splits:
            raise UsageError(f"input_nodes={input_nodes!r}: the dataset's splits are {', '.join(splits) or 'none'}")
        ids = np.asarray(splits[input_nodes], dtype=np.int64)
        return ids, ids
    values = input_nodes.numpy() if isinstance(input_nodes, torch.Tensor) else np.asarray(input_nodes)
    if values.dtype == np.bool_:
        if values.shape != (num_nodes,):
            raise UsageError(f"input_nodes: a mask must have one entry per node ({num_nodes}), not {values.shape}")
        ids = np.flatnonzero(values).astype(np.int64)
        return ids, ids
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise UsageError("input_nodes must be None, a split name, a 1-D tensor of node ids or a bool mask")
    ids = values.astype(np.int64)
    return ids, np.arange(len(ids), dtype=np.int64)


def split_masks(num_nodes: int, splits: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """``train_mask``, ``val_mask``, ... for the batches (sliced by ``n_id``)."""
    masks = {}
    for name, ids in splits.items():
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(np.asarray(ids, dtype=np.int64))] = True
        masks[f"{name}_mask"] = mask
    return masks


def check_source(data, input_nodes, mpi: bool) -> None:
    """What the loader can serve from: a Data, a HeteroData or a dataset path; a path under MPI."""
    if data is None and not mpi:
        raise UsageError(
            "DistributedGraphLoader needs a PyG Data or a dataset path "
            "(or runs under `remotegnn launch`, where the memory ranks serve the dataset)"
        )
    if mpi and isinstance(data, Data | HeteroData):
        raise UsageError(
            "under `remotegnn launch` the memory ranks serve the data: pass the dataset's path "
            "(convert the Data with `remotegnn convert --format pyg`) or None"
        )


def check_untyped(num_neighbors, input_nodes) -> None:
    """Per-type arguments given for a graph without types: a ``UsageError`` naming the argument."""
    if isinstance(num_neighbors, Mapping):
        raise UsageError(
            "num_neighbors: a dict of fanouts per edge type needs a heterogeneous graph (HeteroData, "
            "or a dataset converted from one); this graph has one node and edge type: give one list"
        )
    if isinstance(input_nodes, tuple):
        raise UsageError("input_nodes=(type, nodes) needs a heterogeneous graph; this one has a single node type")
