"""PyG ``HeteroData`` to a dataset: node and edge types in one id space.

Node type t's nodes get consecutive ids (types in ``data.node_types`` order), edge type r's edges
consecutive edge ids (``data.edge_types`` order), so a sampled node's or edge's type follows from
its id, and one CSC, one feature file and one cache serve every type. Feature rows are padded with
zeros to the widest type's ``x`` (a type without ``x`` stores zeros and reports feature_dim 0);
the loader hands each type back its own columns. Labels (``y``) and ``train/val/test_mask`` of
every type that has them are kept; other attributes are named in a warning.
"""

from __future__ import annotations

import os

import numpy as np
from torch_geometric.data import HeteroData

from contracts.dataset import SPLITS, EdgeType, HeteroMeta, NodeType
from remotegnn.convert._common import ConvertResult, DenseFeatures, pick_split, write_dataset
from remotegnn.convert._labels import class_ids
from remotegnn.errors import ConvertError
from remotegnn.store import KEEP_AS_GIVEN

KEPT_NODE_ATTRS = ("x", "y", "num_nodes", *(f"{split}_mask" for split in SPLITS))


def from_pyg_hetero(
    data: HeteroData,
    dst: str | os.PathLike[str],
    *,
    name: str,
    dtype: str | None,
    overwrite: bool,
    source: str,
) -> ConvertResult:
    """Store ``data``'s node types (x, y, masks) and edge types (edge_index) in one id space."""
    if not data.node_types:
        raise ConvertError(f"{source} has no node types")
    counts = [_count(data, t, source) for t in data.node_types]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    index = {t: i for i, t in enumerate(data.node_types)}
    dims = [data[t].x.size(1) if "x" in data[t] else 0 for t in data.node_types]
    width = max(max(dims), 1)
    features = np.zeros((int(offsets[-1]), width), dtype=np.float32)
    labels = np.full(int(offsets[-1]), -1, dtype=np.int64)
    splits: dict[str, list[np.ndarray]] = {}
    notes: list[str] = []
    for t, node_type in enumerate(data.node_types):
        store, lo, hi = data[node_type], offsets[t], offsets[t + 1]
        if "x" in store:
            features[lo:hi, : dims[t]] = store.x.detach().cpu().float().numpy()
        if "y" in store:
            labels[lo:hi] = class_ids(store.y.detach().cpu().numpy(), f"{source} {node_type}.y")[0]
        for split in SPLITS:
            if f"{split}_mask" in store:
                ids = pick_split(store[f"{split}_mask"].numpy(), counts[t], 0, f"{source} {node_type}.{split}_mask")
                splits.setdefault(split, []).append(ids + lo)
        dropped = sorted(set(store.keys()) - set(KEPT_NODE_ATTRS))
        if dropped:
            notes.append(f"{source} {node_type}: not carried over: {', '.join(dropped)}")
    src, dst_ids, edge_types = [], [], []
    for edge_type in data.edge_types:
        edge_index = data[edge_type].edge_index
        s, r, d = edge_type
        src.append(edge_index[0].numpy() + offsets[index[s]])
        dst_ids.append(edge_index[1].numpy() + offsets[index[d]])
        edge_types.append(EdgeType(src=s, rel=r, dst=d, count=edge_index.size(1)))
    hetero = HeteroMeta(
        node_types=[
            NodeType(
                name=t,
                count=c,
                feature_dim=dim,
                labelled="y" in data[t],
                splits=[split for split in SPLITS if f"{split}_mask" in data[t]],
            )
            for t, c, dim in zip(data.node_types, counts, dims, strict=True)
        ],
        edge_types=edge_types,
    )
    return write_dataset(
        dst,
        name=name,
        edges=(_cat(src), _cat(dst_ids)),
        num_nodes=int(offsets[-1]),
        policy=KEEP_AS_GIVEN,
        features=DenseFeatures(features, f"{source} x"),
        labels=labels if (labels >= 0).any() else None,
        splits={split: np.concatenate(ids) for split, ids in splits.items()},
        dtype=dtype,
        overwrite=overwrite,
        notes=notes,
        source=f"pyg {source} (heterogeneous: {len(counts)} node types, {len(edge_types)} edge types)",
        hetero=hetero,
    )


def _count(data: HeteroData, node_type: str, source: str) -> int:
    count = data[node_type].num_nodes
    if count is None:
        raise ConvertError(f"{source} {node_type}: neither x nor num_nodes, so its node count is unknown")
    return int(count)


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, dtype=np.int64)
