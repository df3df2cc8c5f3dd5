"""MAG240M (OGB-LSC), the heterogeneous academic graph, in the layout its publishers ship, read in
bounded memory.

``processed/paper/node_feat.npy`` [papers, 768] float16 (kept float16), ``node_label.npy``
(float, NaN for an unlabelled paper), ``node_year.npy`` (not carried), the three edge types
``author___writes___paper``, ``author___affiliated_with___institution`` and
``paper___cites___paper`` (``edge_index.npy`` [2, E] each), ``meta.pt`` (node counts) and
``split_dict.pt`` (train, valid, test-dev and test-challenge paper ids). The two ``.pt`` files are
read without unpickling arbitrary objects; ``split_dir`` replaces the split.

Stored as one id space like every heterogeneous dataset: papers, then authors, then institutions;
edge types in the order above, each as given (``ogb.lsc.MAG240MDataset`` adds no reverse edges).
Authors and institutions have no features: their rows read as zeros and take no disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from contracts.dataset import EdgeType
from remotegnn.convert._common import ConvertResult, NpyFeatures, StackedFeatures, write_dataset
from remotegnn.convert._ids import read_labels, read_split_dir
from remotegnn.convert._torchfile import load_plain
from remotegnn.convert._typed import TypedEdges, hetero_meta, typed_edges
from remotegnn.errors import ConvertError
from remotegnn.store import KEEP_AS_GIVEN
from remotegnn.store.npy import NpyReader

NODE_TYPES = ("paper", "author", "institution")
EDGE_TYPES = (("author", "writes", "paper"), ("author", "affiliated_with", "institution"), ("paper", "cites", "paper"))
SPLIT_KEYS = {"train": "train", "val": "valid", "test": "test-dev"}


def root_of(folder: Path) -> Path:
    """The dataset folder: the one given, or its mag240m_kddcup2021 folder."""
    inner = folder / "mag240m_kddcup2021"
    return inner if inner.is_dir() else folder


def available(folder: Path) -> bool:
    processed = root_of(folder) / "processed"
    return (processed / "paper" / "node_feat.npy").is_file() and (processed / "paper___cites___paper").is_dir()


def from_mag240m(
    folder: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    name: str | None = None,
    split_dir: str | os.PathLike[str] | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
) -> ConvertResult:
    root = root_of(Path(folder))
    processed = root / "processed"
    if not available(root):
        raise ConvertError(f"{folder} is not MAG240M: processed/paper/node_feat.npy and paper___cites___paper expected")
    counts = _counts(root / "meta.pt")
    offsets = dict(zip(NODE_TYPES, np.cumsum([0, *(counts[t] for t in NODE_TYPES)])[:-1].tolist(), strict=True))
    paper = NpyFeatures(NpyReader(processed / "paper" / "node_feat.npy"))
    if paper.rows != counts["paper"]:
        raise ConvertError(f"{paper.what} has {paper.rows:,} rows but meta.pt counts {counts['paper']:,} papers")
    total = sum(counts.values())
    labels = np.full(total, -1, dtype=np.int64)
    label_reader = NpyReader(processed / "paper" / "node_label.npy")
    if label_reader.rows != counts["paper"] or label_reader.row_items != 1:
        raise ConvertError(f"{label_reader.what} has shape {list(label_reader.shape)}; one label per paper expected")
    labels[: counts["paper"]] = read_labels(label_reader)
    if split_dir is not None:
        splits, split_text = read_split_dir(Path(split_dir), counts["paper"]), f"split from {Path(split_dir).name}"
    else:
        splits, split_text = _split(root / "split_dict.pt", counts["paper"]), "split_dict.pt (test = test-dev)"
    readers = []
    edge_types = []
    for src, rel, dst_type in EDGE_TYPES:
        reader = NpyReader(processed / f"{src}___{rel}___{dst_type}" / "edge_index.npy")
        count = reader.pair_count
        readers.append(TypedEdges(reader, (offsets[src], counts[src]), (offsets[dst_type], counts[dst_type])))
        edge_types.append(EdgeType(src=src, rel=rel, dst=dst_type, count=count))
    stream = typed_edges(readers, sum(t.count for t in edge_types))
    hetero = hetero_meta(counts, {"paper": paper.dim}, "paper", list(splits), edge_types)
    return write_dataset(
        dst,
        name=name or "mag240m",
        edges=stream,
        num_nodes=total,
        policy=KEEP_AS_GIVEN,
        features=StackedFeatures([paper, counts["author"], counts["institution"]], paper.what),
        labels=labels,
        splits=splits,
        dtype=dtype,
        overwrite=overwrite,
        source=f"MAG240M {root.name}, {split_text} (heterogeneous: 3 node types, 3 edge types)",
        hetero=hetero,
    )


def _counts(path: Path) -> dict[str, int]:
    meta = load_plain(path)
    if not isinstance(meta, dict) or not all(isinstance(meta.get(t), int) and meta[t] >= 0 for t in NODE_TYPES):
        raise ConvertError(f"{path} does not hold the node counts of {', '.join(NODE_TYPES)}")
    return {t: int(meta[t]) for t in NODE_TYPES}


def _split(path: Path, num_papers: int) -> dict[str, np.ndarray]:
    split = load_plain(path)
    if not isinstance(split, dict):
        raise ConvertError(f"{path} does not hold a dict of splits")
    out = {}
    for ours, theirs in SPLIT_KEYS.items():
        if theirs not in split:
            continue
        ids = np.asarray(split[theirs])
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise ConvertError(f"{path}[{theirs}] is {ids.dtype}{list(ids.shape)}; a list of paper ids expected")
        bad = np.flatnonzero((ids < 0) | (ids >= num_papers))
        if len(bad):
            raise ConvertError(f"{path}[{theirs}] position {int(bad[0])}: paper {int(ids[bad[0]])} does not exist")
        out[ours] = np.unique(ids.astype(np.int64))
    return out
