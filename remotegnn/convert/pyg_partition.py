"""The directory PyG's ``Partitioner`` (``torch_geometric.distributed``) writes, back to one dataset.

PyG has deprecated its distributed package; this is the way from its partitions to a dataset
that `remotegnn serve` and ``DistributedGraphLoader`` read, with nothing partitioned by hand
(memory machines shard the rows themselves). The Partitioner writes, for a homogeneous graph::

    ROOT/META.json                  num_parts, is_hetero, ...
    ROOT/node_map.pt, edge_map.pt   the partition of each node and edge
    ROOT/part_I/graph.pt            {edge_id, row, col, size}: partition I's edges by global id
    ROOT/part_I/node_feats.pt       {global_id, feats: {x}}: its nodes' features
    ROOT/part_I/edge_feats.pt       its edges' attributes (not read: the format has no place for them)

It keeps no labels or splits. PyG's distributed example (``partition_graph.py``) saves them beside
the partitions, and they are read when they are there: for ``ROOT`` named ``NAME-partitions``, the
labels in ``NAME-label/label.pt`` and each split's node ids in ``NAME-SPLIT-partitions/partitionI.pt``
(train, val, test). Every file is read with ``torch.load(weights_only=True)``, so loading one never
runs code from it. The edges come back in their original order (by global edge id) and the rows
in node order, so the dataset is the graph that was partitioned. Torch and PyG are imported when a
directory is read, not when the format is detected.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contracts.dataset import SPLITS
from remotegnn.convert._common import ConvertResult, PolicyOverrides
from remotegnn.errors import ConvertError
from remotegnn.store import EdgePolicy

if TYPE_CHECKING:
    from torch_geometric.data import Data

META = "META.json"
PARTITIONS_SUFFIX = "-partitions"


def available(src: Path) -> bool:
    """Whether ``src`` looks like a Partitioner's output."""
    return (src / META).is_file() and (src / "part_0").is_dir()


def read_partitions(src: Path) -> Data:
    """The whole graph the partitions in ``src`` were made from, with the labels and splits saved
    beside them where there are any."""
    import torch
    from torch_geometric.data import Data

    meta = _meta(src)
    parts = [src / f"part_{i}" for i in range(meta["num_parts"])]
    graphs = [_load(part / "graph.pt") for part in parts]
    nodes = [_load(part / "node_feats.pt") for part in parts]
    num_nodes = int(graphs[0]["size"][0])
    edge_id = torch.cat([g["edge_id"] for g in graphs])
    edge_index = torch.empty((2, len(edge_id)), dtype=torch.int64)
    edge_index[0, edge_id] = torch.cat([g["row"] for g in graphs])
    edge_index[1, edge_id] = torch.cat([g["col"] for g in graphs])
    if not torch.equal(torch.sort(edge_id).values, torch.arange(len(edge_id))):
        raise ConvertError(f"{src}: the partitions' edge ids are not each edge once (a partition is missing?)")
    global_id = torch.cat([n["global_id"] for n in nodes])
    if not torch.equal(torch.sort(global_id).values, torch.arange(num_nodes)):
        raise ConvertError(f"{src}: the partitions' nodes are not each of the {num_nodes} nodes once")
    data = Data(edge_index=edge_index, num_nodes=num_nodes)
    features = [n["feats"].get("x") for n in nodes]
    if all(x is not None for x in features):
        x = torch.empty((num_nodes, features[0].size(1)), dtype=features[0].dtype)
        x[global_id] = torch.cat(features)
        data.x = x
    _read_beside(src, meta["num_parts"], data)
    return data


def from_pyg_partition(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    name: str | None = None,
    policy: EdgePolicy | PolicyOverrides | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
) -> ConvertResult:
    """Convert the Partitioner's directory ``src`` into the dataset ``dst``."""
    from remotegnn.convert.pyg import from_pyg

    root = Path(src)
    data = read_partitions(root)
    stem = root.name.removesuffix(PARTITIONS_SUFFIX)
    return from_pyg(
        data,
        dst,
        name=name or stem,
        policy=policy,
        dtype=dtype,
        overwrite=overwrite,
        source=f"{root} (PyG partitions)",
    )


def _meta(src: Path) -> dict[str, Any]:
    if not available(src):
        raise ConvertError(f"{src}: no {META} and part_0/ (the directory PyG's Partitioner writes)")
    meta = json.loads((src / META).read_text())
    if meta.get("is_hetero"):
        raise ConvertError(
            f"{src}: heterogeneous partitions are not read yet; convert the HeteroData itself "
            "(`remotegnn convert graph.pt`, a .pt of data.to_dict())"
        )
    if not isinstance(meta.get("num_parts"), int) or meta["num_parts"] < 1:
        raise ConvertError(f"{src}/{META}: num_parts is {meta.get('num_parts')!r}; expected a positive count")
    return meta


def _load(path: Path) -> Any:
    import torch

    if not path.is_file():
        raise ConvertError(f"{path} is missing")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a foreign or truncated file
        raise ConvertError(f"{path} cannot be read as plain tensors ({type(exc).__name__}: {exc})") from exc


def _read_beside(src: Path, num_parts: int, data: Data) -> None:
    """The labels and splits PyG's partition example saves next to ``NAME-partitions``."""
    if not src.name.endswith(PARTITIONS_SUFFIX):
        return
    import torch

    stem = src.parent / src.name.removesuffix(PARTITIONS_SUFFIX)
    labels = Path(f"{stem}-label") / "label.pt"
    if labels.is_file():
        data.y = _load(labels).reshape(-1)
    for split in SPLITS:
        folder = Path(f"{stem}-{split}-partitions")
        if folder.is_dir():
            data[f"{split}_idx"] = torch.cat([_load(folder / f"partition{i}.pt") for i in range(num_parts)])
