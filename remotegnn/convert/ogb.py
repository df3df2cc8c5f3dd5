"""OGB node property prediction datasets (ogbn-papers100M, -products, -arxiv, ...) in the layout
their publishers ship, read in bounded memory.

Two layouts, as the ``ogb`` package's own readers take them:

- binary (ogbn-papers100M): ``raw/data.npz`` with ``edge_index`` [2, E], ``num_nodes_list``,
  ``num_edges_list``, ``node_feat`` [N, F] and other ``node_*``/``edge_*`` arrays (not carried),
  and ``raw/node-label.npz`` with ``node_label`` [N, 1], NaN for an unlabelled node;
- CSV (ogbn-products, -arxiv): ``raw/edge.csv.gz`` (one ``source,target`` row per edge),
  ``num-node-list.csv.gz``, ``num-edge-list.csv.gz``, ``node-feat.csv.gz`` and ``node-label.csv.gz``.

Splits come from ``split/<scheme>/{train,valid,test}.csv.gz`` (the folder's only scheme), or from
``split_dir``. Edges and features are streamed a block at a time (archives compressed or not),
so memory does not grow with the graph; labels take 8 bytes per node.

Direction: ogbn-products and ogbn-proteins store each undirected edge once and the ``ogb``
package adds the reverse (its ``add_inverse_edge``); they are stored undirected here. The others
are stored as given. Self loops and repeated edges are dropped by default, as for every format.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from remotegnn.convert._common import (
    ConvertResult,
    FeatureSource,
    NpyFeatures,
    PolicyOverrides,
    constant_features,
    resolve_policy,
    write_dataset,
)
from remotegnn.convert._ids import read_labels, read_split_dir
from remotegnn.convert._labels import labels_from_values
from remotegnn.convert._table import TableFeatures, read_blocks, read_table, sniff
from remotegnn.errors import ConvertError
from remotegnn.store import EdgePolicy
from remotegnn.store.build import EDGE_BLOCK, EdgeStream
from remotegnn.store.npy import NpyReader, archive_members

# The datasets whose files list each undirected edge once (the ogb package's add_inverse_edge).
INVERSE_EDGE_DATASETS = ("products", "proteins")
BINARY_KEYS = ("edge_index", "num_nodes_list", "num_edges_list")


def available(folder: Path) -> bool:
    raw = folder / "raw"
    return (raw / "data.npz").is_file() or (raw / "edge.csv.gz").is_file()


def from_ogb(
    folder: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    name: str | None = None,
    split_dir: str | os.PathLike[str] | None = None,
    policy: EdgePolicy | PolicyOverrides | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
) -> ConvertResult:
    folder = Path(folder)
    raw = folder / "raw"
    if not available(folder):
        raise ConvertError(
            f"{folder} is not an OGB node property dataset: neither raw/data.npz nor raw/edge.csv.gz exists"
        )
    binary = (raw / "data.npz").is_file()
    notes: list[str] = []
    if binary:
        num_nodes, edges, features = _binary(raw / "data.npz", notes)
        labels = _binary_labels(raw / "node-label.npz", num_nodes)
    else:
        num_nodes, edges, features = _csv(raw, notes)
        labels = _csv_labels(raw / "node-label.csv.gz", num_nodes)
    splits, split_text = _splits(folder, split_dir, num_nodes)
    inverse = any(d in folder.name.lower() for d in INVERSE_EDGE_DATASETS)
    default = EdgePolicy(self_loops="drop", duplicates="drop", undirected=inverse)
    return write_dataset(
        dst,
        name=name or folder.name,
        edges=edges,
        num_nodes=num_nodes,
        policy=resolve_policy(policy, default),
        features=features,
        labels=labels,
        splits=splits,
        dtype=dtype,
        overwrite=overwrite,
        notes=notes,
        source=f"OGB {'binary' if binary else 'CSV'} {folder.name}, {split_text}",
    )


# -- binary layout ------------------------------------------------------------------------------
def _binary(path: Path, notes: list[str]) -> tuple[int, EdgeStream, FeatureSource]:
    members = archive_members(path)
    if missing := [k for k in BINARY_KEYS if k not in members]:
        raise ConvertError(f"{path} has no {', '.join(missing)} (keys: {', '.join(members)})")
    num_nodes = _single(NpyReader(path, "num_nodes_list"), "nodes")
    num_edges = _single(NpyReader(path, "num_edges_list"), "edges")
    edge_index = NpyReader(path, "edge_index")
    if edge_index.shape != (2, num_edges):
        raise ConvertError(
            f"{edge_index.what} has shape {list(edge_index.shape)}; num_edges_list says [2, {num_edges:,}]"
        )
    features: FeatureSource
    if "node_feat" in members:
        features = NpyFeatures(NpyReader(path, "node_feat"))
    else:
        features = constant_features(num_nodes, notes, str(path))
    if unused := sorted(set(members) - {*BINARY_KEYS, "node_feat"}):
        notes.append(f"{path.name}: not carried over: {', '.join(unused)}")

    stream = EdgeStream(num_edges, lambda: edge_index.pairs(EDGE_BLOCK), lambda i: f"{edge_index.what} edge {i}")
    return num_nodes, stream, features


def _single(reader: NpyReader, what: str) -> int:
    values = next(reader.blocks(max(reader.rows, 1)), np.empty(0))
    if values.size != 1 or values.dtype.kind not in "iu":
        raise ConvertError(
            f"{reader.what} holds {values.size} {values.dtype} values; a node property dataset is one graph "
            f"(one integer count of {what})"
        )
    return int(values.ravel()[0])


def _binary_labels(path: Path, num_nodes: int) -> np.ndarray | None:
    if not path.is_file():
        return None
    reader = NpyReader(path, "node_label")
    if reader.rows != num_nodes or reader.row_items != 1:
        raise ConvertError(
            f"{reader.what} has shape {list(reader.shape)}; one label per node ([{num_nodes:,}, 1]) is expected"
        )
    return read_labels(reader)


# -- CSV layout ---------------------------------------------------------------------------------
def _csv(raw: Path, notes: list[str]) -> tuple[int, EdgeStream, FeatureSource]:
    num_nodes = _count(raw / "num-node-list.csv.gz", "nodes")
    num_edges = _count(raw / "num-edge-list.csv.gz", "edges")
    edge_file = raw / "edge.csv.gz"
    fmt = sniff(edge_file, "edge list", header=False)
    if fmt.ncols != 2:
        raise ConvertError(f"{edge_file}:1: {fmt.ncols} fields; each row is one edge, source,target")

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for block in read_blocks(edge_file, fmt, np.int64, None, "edge list"):
            yield block[:, 0], block[:, 1]

    features: FeatureSource
    feat_file = raw / "node-feat.csv.gz"
    if feat_file.is_file():
        features = TableFeatures(feat_file, sniff(feat_file, "node features", header=False), str(feat_file))
    else:
        features = constant_features(num_nodes, notes, str(raw))
    return num_nodes, EdgeStream(num_edges, chunks, lambda i: f"{edge_file}:{i + 1}"), features


def _count(path: Path, what: str) -> int:
    values = read_table(path, sniff(path, f"number of {what}", header=False), np.int64, None, f"number of {what}")
    if values.size != 1:
        raise ConvertError(f"{path} holds {values.size} counts; a node property dataset is one graph")
    return int(values[0, 0])


def _csv_labels(path: Path, num_nodes: int) -> np.ndarray | None:
    if not path.is_file():
        return None
    values = read_table(path, sniff(path, "labels", header=False), np.float64, None, "labels")
    if values.shape[1] != 1:
        raise ConvertError(
            f"{path} has {values.shape[1]} label columns; one class per node is supported (not multi-task labels)"
        )
    if len(values) != num_nodes:
        raise ConvertError(f"{path} has {len(values):,} rows but the graph has {num_nodes:,} nodes")
    return labels_from_values(values[:, 0], str(path))


# -- splits -------------------------------------------------------------------------------------
def _splits(folder: Path, split_dir, num_nodes: int) -> tuple[dict[str, np.ndarray], str]:
    if split_dir is not None:
        return read_split_dir(Path(split_dir), num_nodes), f"split from {Path(split_dir).name}"
    schemes = sorted(p for p in (folder / "split").glob("*") if p.is_dir())
    if not schemes:
        return {}, "no split"
    if len(schemes) > 1:
        raise ConvertError(
            f"{folder / 'split'} holds {len(schemes)} split schemes ({', '.join(p.name for p in schemes)}); "
            "pass --split-dir with the one to use"
        )
    return read_split_dir(schemes[0], num_nodes), f"{schemes[0].name} split"
