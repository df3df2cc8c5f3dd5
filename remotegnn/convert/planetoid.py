"""Cora and CiteSeer (PubMed's files share the layout, untested here) from the Planetoid files
``ind.NAME.{x,tx,allx,y,ty,ally,graph,test.index}``, with the standard split, matching PyG's
``Planetoid`` dataset.

The files are Python 2 pickles of scipy sparse matrices, numpy arrays and a defaultdict. They
are read with a restricted unpickler that admits only those classes (a pickle can otherwise
run arbitrary code), and the sparse matrices are unpickled into a small stand-in that keeps
their arrays, so scipy is not needed.

Conventions follow PyG's ``read_planetoid_data``: nodes are ``allx`` rows then the test rows;
test node ``test.index[i]`` gets row i of ``tx``; CiteSeer's test ids have 15 gaps (nodes with
edges but no row in ``tx``; PyG's comment calls them isolated), which get zero feature rows and
label 0 (the argmax of a zero row) and belong to no split; labels are the argmax of the one-hot
rows; train = the first ``len(y)`` nodes, val = the next 500, test = ``test.index``. The graph
is made undirected with self loops and duplicate edges dropped, giving PyG's edge counts
(Cora 10,556, CiteSeer 9,104).
"""

from __future__ import annotations

import codecs
import os
import pickle
from collections import defaultdict
from pathlib import Path

import numpy as np

from remotegnn.convert._common import (
    ConvertResult,
    DenseFeatures,
    PolicyOverrides,
    choose_source,
    require_file,
    resolve_policy,
    write_dataset,
)
from remotegnn.errors import ConvertError
from remotegnn.store import EdgePolicy

DEFAULT_POLICY = EdgePolicy(self_loops="drop", duplicates="drop", undirected=True)
PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph")
VAL_SIZE = 500


class _SparseMatrix:
    """Stands in for scipy's csr_matrix while unpickling: keeps shape and CSR arrays."""

    def __setstate__(self, state: dict) -> None:
        self.state = state

    def to_dense(self, what: str) -> np.ndarray:
        try:
            rows, cols = self.state["_shape"]
            indptr, indices, data = (np.asarray(self.state[k]) for k in ("indptr", "indices", "data"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConvertError(f"{what} is not a CSR matrix pickle ({exc})") from None
        dense = np.zeros((rows, cols), dtype=np.float32)
        row_ids = np.repeat(np.arange(rows), np.diff(indptr))
        np.add.at(dense, (row_ids, indices), data)  # scipy's todense() sums duplicate entries too
        return dense


_RECONSTRUCT = np.zeros(0).__reduce__()[0]  # numpy's own unpickling helper, whatever its module path
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("scipy.sparse.csr", "csr_matrix"): _SparseMatrix,
    ("scipy.sparse._csr", "csr_matrix"): _SparseMatrix,
    ("_codecs", "encode"): codecs.encode,  # how Python 3 writes bytes at protocol 2 (files re-saved since)
    ("collections", "defaultdict"): defaultdict,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
}


class _PlanetoidUnpickler(pickle.Unpickler):
    def __init__(self, handle, path: Path):
        super().__init__(handle, encoding="latin1")
        self.path = path

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise ConvertError(
                f"{self.path} asks to unpickle {module}.{name}, which a Planetoid file never holds; refusing to load it"
            ) from None


def _unpickle(path: Path):
    require_file(path, "Planetoid file")
    try:
        with open(path, "rb") as handle:
            return _PlanetoidUnpickler(handle, path).load()
    except ConvertError:
        raise
    except Exception as exc:  # any malformed pickle: name the file, not the unpickler's internals
        raise ConvertError(f"{path} is not a readable Planetoid pickle ({type(exc).__name__}: {exc})") from None


def _dense(obj, path: Path) -> np.ndarray:
    if isinstance(obj, _SparseMatrix):
        return obj.to_dense(str(path))
    if isinstance(obj, np.ndarray) and obj.ndim == 2:
        return obj
    raise ConvertError(f"{path} holds {type(obj).__name__}, expected a 2-D matrix")


def available(folder: Path) -> list[str]:
    """Dataset names with a complete set of Planetoid files in ``folder``."""
    names = {p.name[len("ind.") : -len(".graph")] for p in folder.glob("ind.*.graph")}
    return sorted(n for n in names if all((folder / f"ind.{n}.{part}").is_file() for part in PARTS + ("test.index",)))


def _pick_name(folder: Path, name: str | None) -> str:
    if not folder.is_dir():
        raise ConvertError(f"{folder} is not a folder; --format planetoid reads a folder of ind.NAME.* files")
    return choose_source(
        folder,
        name,
        available(folder),
        "Planetoid dataset",
        f"complete Planetoid set (ind.NAME.{{{','.join(PARTS)},test.index}})",
        incomplete=lambda wanted: _refuse_incomplete(folder, wanted),
    )


def _refuse_incomplete(folder: Path, name: str) -> None:
    if (folder / f"ind.{name.lower()}.graph").exists():
        missing = [p for p in PARTS + ("test.index",) if not (folder / f"ind.{name.lower()}.{p}").is_file()]
        raise ConvertError(
            f"{folder}: Planetoid dataset {name} is incomplete, missing "
            + ", ".join(f"ind.{name.lower()}.{p}" for p in missing)
        )


def _test_index(path: Path) -> np.ndarray:
    require_file(path, "Planetoid file")
    ids = []
    for number, line in enumerate(path.read_text(encoding="latin1").splitlines(), start=1):
        if line.strip():
            try:
                ids.append(int(line))
            except ValueError:
                raise ConvertError(f"{path}:{number}: {line.strip()!r} is not a node id") from None
    if not ids:
        raise ConvertError(f"{path} lists no test nodes")
    return np.array(ids, dtype=np.int64)


def from_planetoid(
    folder: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    name: str | None = None,
    policy: EdgePolicy | PolicyOverrides | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
) -> ConvertResult:
    """Convert ``ind.NAME.*`` in ``folder`` (``name`` may be omitted when only one set is there)."""
    folder = Path(folder)
    name = _pick_name(folder, name)
    files = {part: folder / f"ind.{name}.{part}" for part in PARTS + ("test.index",)}
    raw = {part: _unpickle(files[part]) for part in PARTS}
    x, tx, allx = (_dense(raw[p], files[p]) for p in ("x", "tx", "allx"))
    y, ty, ally = (_dense(raw[p], files[p]) for p in ("y", "ty", "ally"))
    test_index = _test_index(files["test.index"])
    _check_shapes(files, x, tx, allx, y, ty, ally, test_index)

    lo, hi = int(test_index.min()), int(test_index.max())
    num_nodes = len(allx) + hi - lo + 1
    features = np.zeros((num_nodes, allx.shape[1]), dtype=np.float32)
    features[: len(allx)] = allx
    features[test_index] = tx
    labels = np.zeros(num_nodes, dtype=np.int64)
    labels[: len(ally)] = ally.argmax(axis=1)
    labels[test_index] = ty.argmax(axis=1)

    src, dst_ids = _graph_edges(raw["graph"], files["graph"])
    splits = {"train": np.arange(len(y)), "val": np.arange(len(y), len(y) + VAL_SIZE), "test": test_index}
    return write_dataset(
        dst,
        name=name,
        edges=(src, dst_ids),
        num_nodes=num_nodes,
        policy=resolve_policy(policy, DEFAULT_POLICY),
        features=DenseFeatures(features, f"ind.{name}.allx/tx"),
        labels=labels,
        classes=[str(c) for c in range(ally.shape[1])],
        splits=splits,
        dtype=dtype,
        source=f"planetoid {name} (ind.{name}.*), PyG's node order and standard split",
        overwrite=overwrite,
    )


def _check_shapes(files: dict[str, Path], x, tx, allx, y, ty, ally, test_index) -> None:
    pairs = (("x", x, "y", y), ("tx", tx, "ty", ty), ("allx", allx, "ally", ally))
    for fname, feats, lname, labels in pairs:
        if len(feats) != len(labels):
            raise ConvertError(f"{files[fname]} has {len(feats):,} rows but {files[lname]} has {len(labels):,}")
    for part, arr in (("x", x), ("tx", tx)):
        if arr.shape[1] != allx.shape[1]:
            raise ConvertError(f"{files[part]} has {arr.shape[1]:,} columns but {files['allx']} has {allx.shape[1]:,}")
    for part, arr in (("y", y), ("ty", ty)):
        if arr.shape[1] != ally.shape[1]:
            raise ConvertError(f"{files[part]} has {arr.shape[1]} classes but {files['ally']} has {ally.shape[1]}")
    if len(test_index) != len(tx):
        raise ConvertError(
            f"{files['test.index']} lists {len(test_index):,} nodes but {files['tx']} has {len(tx):,} rows"
        )
    if len(y) + VAL_SIZE > len(allx):
        raise ConvertError(
            f"{files['allx']} has {len(allx):,} rows, too few for {len(y):,} training and {VAL_SIZE} validation nodes"
        )
    if len(test_index) and int(test_index.min()) != len(allx):
        raise ConvertError(
            f"{files['test.index']} starts at node {int(test_index.min()):,}, expected {len(allx):,} "
            f"(the test nodes follow the {len(allx):,} rows of {files['allx'].name})"
        )
    if len(np.unique(test_index)) != len(test_index):
        raise ConvertError(f"{files['test.index']} lists a node more than once")


def _graph_edges(graph, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Adjacency lists {node: [neighbours]} as (source, target) arrays, in the file's order."""
    if not isinstance(graph, dict):
        raise ConvertError(f"{path} holds {type(graph).__name__}, expected a dict of adjacency lists")
    try:
        src = np.fromiter(graph.keys(), dtype=np.int64, count=len(graph))
        lists = [np.asarray(v, dtype=np.int64).ravel() for v in graph.values()]
    except (TypeError, ValueError):
        raise ConvertError(f"{path}: adjacency lists must map node ids to lists of node ids") from None
    counts = np.array([len(v) for v in lists], dtype=np.int64)
    dst = np.concatenate(lists) if lists else np.empty(0, dtype=np.int64)
    return np.repeat(src, counts), dst
