"""IGB260M, the Illinois Graph Benchmark's homogeneous citation graph (sizes experimental to full),
in the layout its publishers ship, read in bounded memory.

``SIZE/processed/paper/node_feat.npy`` [N, 1024] float32, ``node_label_19.npy`` or
``node_label_2K.npy`` [N] (``label_classes`` 19 or 2983), ``paper__cites__paper/edge_index.npy``
[E, 2]. The large and full sizes ship features and labels as bare float32 arrays under a
``.npy`` name (the IGB loader memory-maps them by shape); both kinds are read.

As the IGB loader does: edges are directed, source to target as listed; labels are float class
ids cast to integers; the split is the first 60% of the labelled nodes for training, the next
20% for validation and the rest for testing, where the labelled nodes are all of them except in
the full size, whose first 227,130,858 (19 classes) or 157,675,969 (2,983 classes) are. The
loader also replaces self loops by one per node; here self loops are dropped by default, as for
every format (GraphSAGE keeps a node's own input through its root weight).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from foundation.errors import UsageError
from remotegnn.convert._common import ConvertResult, NpyFeatures, PolicyOverrides, resolve_policy, write_dataset
from remotegnn.convert._ids import labels_from_values
from remotegnn.errors import ConvertError
from remotegnn.store import EdgePolicy
from remotegnn.store.build import EDGE_BLOCK, EdgeStream
from remotegnn.store.npy import NpyReader

FEATURE_DIM = 1024
LABEL_FILES = {19: "node_label_19.npy", 2983: "node_label_2K.npy"}
FULL_NODES = 269_346_174
FULL_LABELLED = {19: 227_130_858, 2983: 157_675_969}  # the IGB loader's n_labeled_idx
TRAIN_SHARE, VAL_SHARE = 0.6, 0.2
DEFAULT_POLICY = EdgePolicy(self_loops="drop", duplicates="drop", undirected=False)
OTHER_NODE_TYPES = ("author", "institute", "fos", "journal", "conference")


def processed_dir(folder: Path) -> Path:
    return folder / "processed" if (folder / "processed").is_dir() else folder


def available(folder: Path) -> bool:
    processed = processed_dir(folder)
    return (processed / "paper" / "node_feat.npy").is_file() and (
        processed / "paper__cites__paper" / "edge_index.npy"
    ).is_file()


def from_igb(
    folder: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    name: str | None = None,
    label_classes: int = 19,
    policy: EdgePolicy | PolicyOverrides | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
) -> ConvertResult:
    folder = Path(folder)
    if label_classes not in LABEL_FILES:
        raise UsageError(f"--label-classes {label_classes}: IGB labels papers with 19 or 2983 classes")
    processed = processed_dir(folder)
    if not available(folder):
        raise ConvertError(
            f"{folder} is not an IGB dataset: processed/paper/node_feat.npy and "
            "processed/paper__cites__paper/edge_index.npy are expected"
        )
    if heterogeneous := [t for t in OTHER_NODE_TYPES if (processed / t).is_dir()]:
        raise ConvertError(
            f"{folder} is IGBH, the heterogeneous graph (it has {', '.join(heterogeneous)}); "
            "convert its paper citation graph from a folder holding only paper and paper__cites__paper"
        )
    features = NpyFeatures(_array(processed / "paper" / "node_feat.npy", (FEATURE_DIM,)))
    num_nodes = features.rows
    assert num_nodes is not None  # an array's row count is known
    label_reader = _array(processed / "paper" / LABEL_FILES[label_classes], ())
    if label_reader.rows != num_nodes:
        raise ConvertError(f"{label_reader.what} has {label_reader.rows:,} labels but there are {num_nodes:,} papers")
    labels = labels_from_values(np.concatenate(list(label_reader.blocks(EDGE_BLOCK))), label_reader.what)
    labelled = FULL_LABELLED[label_classes] if num_nodes == FULL_NODES else num_nodes
    labels[labelled:] = -1
    n_train, n_val = int(labelled * TRAIN_SHARE), int(labelled * VAL_SHARE)
    splits = {
        "train": np.arange(n_train),
        "val": np.arange(n_train, n_train + n_val),
        "test": np.arange(n_train + n_val, labelled),
    }
    edges = NpyReader(processed / "paper__cites__paper" / "edge_index.npy")
    count = edges.shape[0] if edges.shape[-1] == 2 else edges.shape[1]
    stream = EdgeStream(count, lambda: edges.pairs(EDGE_BLOCK), lambda i: f"{edges.what} edge {i}")
    return write_dataset(
        dst,
        name=name or f"igb-{folder.name}",
        edges=stream,
        num_nodes=num_nodes,
        policy=resolve_policy(policy, DEFAULT_POLICY),
        features=features,
        labels=labels,
        splits=splits,
        dtype=dtype,
        overwrite=overwrite,
        source=f"IGB {folder.name}, {label_classes} classes, IGB's 60/20/20 split of {labelled:,} labelled papers",
    )


def _array(path: Path, row_shape: tuple[int, ...]) -> NpyReader:
    """A ``.npy`` file, or a bare float32 array of rows ``row_shape`` under that name."""
    if not path.is_file():
        raise ConvertError(f"{path} does not exist")
    with open(path, "rb") as handle:
        bare = handle.read(6) != b"\x93NUMPY"
    return NpyReader.bare(path, np.float32, row_shape) if bare else NpyReader(path)
