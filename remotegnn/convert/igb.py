"""IGB260M and IGBH, the Illinois Graph Benchmark's citation graph and its heterogeneous
version (sizes experimental to full), in the layout their publishers ship, read in bounded memory.

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

IGBH (a folder that also holds ``author``, ``institute``, ``fos`` and, in the large sizes,
``journal`` and ``conference``, each with ``node_feat.npy``, and their edge folders such as
``paper__written_by__author``) is stored as a heterogeneous dataset: node types one after the
other in one id space, edge types as published ([E, 2], no reverse types added), paper labels and
the same split as above. Every type has 1,024 features.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from contracts.dataset import EdgeType
from foundation.errors import UsageError
from remotegnn.convert._common import (
    ConvertResult,
    NpyFeatures,
    PolicyOverrides,
    StackedFeatures,
    resolve_policy,
    write_dataset,
)
from remotegnn.convert._ids import read_labels
from remotegnn.convert._typed import TypedEdges, hetero_meta, typed_edges
from remotegnn.errors import ConvertError
from remotegnn.store import KEEP_AS_GIVEN, EdgePolicy
from remotegnn.store.build import EDGE_BLOCK, EdgeStream
from remotegnn.store.npy import NpyReader

FEATURE_DIM = 1024
LABEL_FILES = {19: "node_label_19.npy", 2983: "node_label_2K.npy"}
FULL_NODES = 269_346_174
FULL_LABELLED = {19: 227_130_858, 2983: 157_675_969}  # the IGB loader's n_labeled_idx
TRAIN_SHARE, VAL_SHARE = 0.6, 0.2
DEFAULT_POLICY = EdgePolicy(self_loops="drop", duplicates="drop", undirected=False)
HETERO_NODE_TYPES = ("paper", "author", "institute", "fos", "journal", "conference")  # IGBH; journal and
# conference exist in its large and full sizes only
HETERO_EDGE_TYPES = (
    ("paper", "cites", "paper"),
    ("paper", "written_by", "author"),
    ("author", "affiliated_to", "institute"),
    ("paper", "topic", "fos"),
    ("paper", "published", "journal"),
    ("paper", "venue", "conference"),
)


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
    if any((processed / t).is_dir() for t in HETERO_NODE_TYPES[1:]):
        return _heterogeneous(folder, processed, dst, name, label_classes, dtype, overwrite)
    features = NpyFeatures(_array(processed / "paper" / "node_feat.npy", (FEATURE_DIM,)))
    num_nodes = _rows(features)
    labels, splits, labelled = _paper_labels(processed, label_classes, num_nodes)
    edges = NpyReader(processed / "paper__cites__paper" / "edge_index.npy")
    stream = EdgeStream(edges.pair_count, lambda: edges.pairs(EDGE_BLOCK), lambda i: f"{edges.what} edge {i}")
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


def _heterogeneous(
    folder: Path, processed: Path, dst, name: str | None, label_classes: int, dtype: str | None, overwrite: bool
) -> ConvertResult:
    """IGBH: every node type present (each with 1024 features), every edge type whose two node
    types are present, in one id space; edges as published (the IGB loader adds no reverse types)."""
    types = [t for t in HETERO_NODE_TYPES if (processed / t / "node_feat.npy").is_file()]
    features = {t: NpyFeatures(_array(processed / t / "node_feat.npy", (FEATURE_DIM,))) for t in types}
    counts = {t: _rows(features[t]) for t in types}
    offsets = dict(zip(types, np.cumsum([0, *counts.values()])[:-1].tolist(), strict=True))
    paper_labels, splits, labelled = _paper_labels(processed, label_classes, counts["paper"])
    labels = np.full(sum(counts.values()), -1, dtype=np.int64)
    labels[: counts["paper"]] = paper_labels
    edge_files, edge_types = [], []
    for src, rel, dst_type in HETERO_EDGE_TYPES:
        path = processed / f"{src}__{rel}__{dst_type}" / "edge_index.npy"
        if not path.is_file():
            continue
        if src not in counts or dst_type not in counts:
            missing = dst_type if src in counts else src
            raise ConvertError(f"{path} links {src} to {dst_type}, but {processed / missing}/node_feat.npy is missing")
        reader = NpyReader(path)
        edge_files.append(TypedEdges(reader, (offsets[src], counts[src]), (offsets[dst_type], counts[dst_type])))
        edge_types.append(EdgeType(src=src, rel=rel, dst=dst_type, count=reader.pair_count))
    hetero = hetero_meta(counts, dict.fromkeys(types, FEATURE_DIM), "paper", list(splits), edge_types)
    return write_dataset(
        dst,
        name=name or f"igbh-{folder.name}",
        edges=typed_edges(edge_files, sum(t.count for t in edge_types)),
        num_nodes=len(labels),
        policy=KEEP_AS_GIVEN,
        features=StackedFeatures(list(features.values()), str(processed)),
        labels=labels,
        splits=splits,
        dtype=dtype,
        overwrite=overwrite,
        source=f"IGBH {folder.name} (heterogeneous: {len(types)} node types, {len(edge_types)} edge types), "
        f"{label_classes} classes, IGB's 60/20/20 split of {labelled:,} labelled papers",
        hetero=hetero,
    )


def _rows(features: NpyFeatures) -> int:
    assert features.rows is not None  # an array's row count is known
    return features.rows


def _paper_labels(processed: Path, label_classes: int, papers: int) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """The papers' class ids (-1 beyond the labelled ones) and IGB's split of the labelled papers."""
    reader = _array(processed / "paper" / LABEL_FILES[label_classes], ())
    if reader.rows != papers:
        raise ConvertError(f"{reader.what} has {reader.rows:,} labels but there are {papers:,} papers")
    labels = read_labels(reader)
    labelled = FULL_LABELLED[label_classes] if papers == FULL_NODES else papers
    labels[labelled:] = -1
    n_train, n_val = int(labelled * TRAIN_SHARE), int(labelled * VAL_SHARE)
    splits = {
        "train": np.arange(n_train),
        "val": np.arange(n_train, n_train + n_val),
        "test": np.arange(n_train + n_val, labelled),
    }
    return labels, splits, labelled


def _array(path: Path, row_shape: tuple[int, ...]) -> NpyReader:
    """A ``.npy`` file, or a bare float32 array of rows ``row_shape`` under that name."""
    if not path.is_file():
        raise ConvertError(f"{path} does not exist")
    with open(path, "rb") as handle:
        bare = handle.read(6) != b"\x93NUMPY"
    return NpyReader.bare(path, np.float32, row_shape) if bare else NpyReader(path)
