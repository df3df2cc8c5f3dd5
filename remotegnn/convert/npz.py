"""Graphs in a numpy ``.npz`` archive: the heterophilous-graphs layout (tolokers, roman-empire, ...)
and a generic one, told apart only by key names.

Keys read (the first present of each group):

- edges: ``edge_index`` [2, E] (PyG's layout), or ``edges`` [E, 2] (heterophilous-graphs);
- features: ``x``, ``node_features`` or ``features`` [N, F] (optional: a constant column otherwise);
- labels: ``y``, ``node_labels`` or ``labels`` [N] (optional);
- splits, for each of train/val/test: ``{split}_mask``, ``{split}_masks`` (boolean [N], or
  [K, N] / [N, K] for K alternative splits, of which ``split_index`` is taken) or ``{split}_idx``
  (node ids); a seeded random split is made instead when ``split_ratios`` is given;
- ``num_nodes`` (a scalar, optional): else the feature rows, the label count, or max id + 1.

Default edge policy: self loops and duplicates dropped; undirected for ``edges`` (the
heterophilous-graphs files list each undirected pair once, and PyG's loader symmetrises them),
directed for ``edge_index`` (PyG's layout already stores both directions when it means to).
Other keys are reported as not carried. Archives are opened with ``allow_pickle=False``.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from contracts.dataset import SPLITS
from remotegnn.convert._common import (
    ConvertResult,
    DenseFeatures,
    PolicyOverrides,
    choose_splits,
    constant_features,
    expect_rows,
    pick_split,
    require_file,
    resolve_policy,
    write_dataset,
)
from remotegnn.convert._labels import class_ids
from remotegnn.errors import ConvertError
from remotegnn.store import EdgePolicy

FEATURE_KEYS = ("x", "node_features", "features")
LABEL_KEYS = ("y", "node_labels", "labels")


def split_keys(split: str) -> tuple[str, ...]:
    return (f"{split}_mask", f"{split}_masks", f"{split}_idx")


def from_npz(
    path: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    name: str | None = None,
    split_index: int = 0,
    split_ratios: tuple[float, float, float] | None = None,
    seed: int = 0,
    policy: EdgePolicy | PolicyOverrides | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
) -> ConvertResult:
    path = require_file(Path(path), "npz file")
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ConvertError(f"{path} is not a readable .npz archive ({exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ConvertError(f"{path} holds a single array; expected an .npz archive with edge_index or edges")
    with archive:
        arrays = _load_members(archive, path)
    used: set[str] = set()

    def first(keys: tuple[str, ...]) -> tuple[str | None, np.ndarray | None]:
        key = next((k for k in keys if k in arrays), None)
        if key is not None:
            used.add(key)
        return key, arrays.get(key) if key else None

    edge_key, edges = first(("edge_index", "edges"))
    if edges is None:
        raise ConvertError(f"{path} has no edge_index [2, E] or edges [E, 2] (keys: {', '.join(arrays) or 'none'})")
    assert edge_key is not None  # first() finds an array only under a key
    src, dst_ids = _edge_arrays(edges, edge_key, path)
    feat_key, x = first(FEATURE_KEYS)
    label_key, y = first(LABEL_KEYS)
    _, n_given = first(("num_nodes",))
    num_nodes = _num_nodes(n_given, x, y, src, dst_ids, path)

    notes: list[str] = []
    features = (
        DenseFeatures(x, f"{path}[{feat_key}]") if x is not None else constant_features(num_nodes, notes, str(path))
    )
    labels: np.ndarray | None = None
    classes: list[str] = []
    if y is not None:
        labels, classes = class_ids(y, f"{path}[{label_key}]")
        expect_rows(len(labels), num_nodes, f"{path}[{label_key}]")

    splits = {}
    for split in SPLITS:
        key, values = first(split_keys(split))
        if values is not None:
            splits[split] = pick_split(values, num_nodes, split_index, f"{path}[{key}]")
    splits, split_text = choose_splits(
        splits, labels, num_nodes, split_ratios, seed, f"split {split_index} of the stored masks"
    )
    if unused := sorted(set(arrays) - used):
        notes.append(f"{path.name}: not carried over: {', '.join(unused)}")

    default = EdgePolicy(self_loops="drop", duplicates="drop", undirected=edge_key == "edges")
    return write_dataset(
        dst,
        name=name or path.stem,
        edges=(src, dst_ids),
        num_nodes=num_nodes,
        policy=resolve_policy(policy, default),
        features=features,
        labels=labels,
        classes=classes,
        splits=splits,
        dtype=dtype,
        overwrite=overwrite,
        notes=notes,
        source=f"npz {path.name}, {split_text}",
    )


def _load_members(archive: np.lib.npyio.NpzFile, path: Path) -> dict[str, np.ndarray]:
    arrays = {}
    for key in archive.files:
        try:
            arrays[key] = archive[key]
        except ValueError as exc:  # object arrays need pickle, which is refused
            raise ConvertError(
                f"{path}[{key}] cannot be read without unpickling ({exc}); store plain numeric arrays"
            ) from None
    return arrays


def _edge_arrays(edges: np.ndarray, key: str, path: Path) -> tuple[np.ndarray, np.ndarray]:
    if edges.dtype.kind not in "iu":
        raise ConvertError(f"{path}[{key}] has dtype {edges.dtype}; node ids must be integers")
    if key == "edge_index" and (edges.ndim != 2 or edges.shape[0] != 2):
        raise ConvertError(f"{path}[edge_index] has shape {list(edges.shape)}; expected [2, E]")
    if key == "edges" and (edges.ndim != 2 or edges.shape[1] != 2):
        raise ConvertError(f"{path}[edges] has shape {list(edges.shape)}; expected [E, 2]")
    pairs = edges if key == "edge_index" else edges.T
    return pairs[0], pairs[1]


def _num_nodes(given, x, y, src, dst, path: Path) -> int:
    if given is not None:
        if given.shape != () or given.dtype.kind not in "iu":
            raise ConvertError(f"{path}[num_nodes] must be an integer scalar, got {given.dtype}{list(given.shape)}")
        return int(given)
    if x is not None:
        return len(x)
    if y is not None:
        return len(y)
    return int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
