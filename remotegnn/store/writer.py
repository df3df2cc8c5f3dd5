"""Write a dataset directory atomically: everything goes to a hidden partial directory beside the
destination (:class:`foundation.partial.PartialDirectory`), which is renamed into place only when
every file and the meta are complete. A failure (bad input, a full disk, Ctrl-C, SIGTERM or SIGHUP
in a command) removes the partial directory, so no partial dataset is ever visible under the
destination name; one a killed writer left is dealt with by the next writer of that name.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
from numpy.lib.format import open_memmap

from contracts.dataset import GRAPH_FILES, SPLITS, WEIGHT_FILE, DatasetMeta, FileEntry, HeteroMeta
from foundation.errors import UsageError
from foundation.fileio import write_model
from foundation.partial import PartialDirectory, fsync_path
from remotegnn.store.build import BUILD_MEMORY_BYTES, EdgeStream, build_graph
from remotegnn.store.graph import EdgePolicy, EdgeReport
from remotegnn.store.npy import NpyAppender, NpyRows

HASH_CHUNK = 1 << 24
SCRATCH = "scratch"  # in the partial directory, beside what becomes DST


def file_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()


class DatasetWriter:
    """Build one dataset: ``with DatasetWriter(dst, name=...) as w: w.write_graph(...); ...``.

    The graph must be written first (it fixes the node count and index dtype). ``features()``
    returns a writable memory map so large feature matrices can be streamed in chunks.
    """

    def __init__(self, dst: str | os.PathLike[str], *, name: str, overwrite: bool = False):
        self.dst = Path(dst)
        if self.dst.exists() and not overwrite:
            raise UsageError(f"{self.dst} already exists; pass --overwrite to replace it, or choose another path")
        self.name = name
        self.partial = PartialDirectory(self.dst)
        self.tmp = self.partial.path
        self.num_nodes: int | None = None
        self.num_edges = 0
        self.index_dtype = "int64"
        self.undirected = False
        self.num_classes = 0
        self.edge_weight: str | None = None
        self.hetero: HeteroMeta | None = None
        self.node_order: str | None = None
        self._roles: list[str] = []

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """Remove the partial dataset; a full disk becomes one line that says so (every writer -
        convert, synth, reorder, partition - ends the same way, and nothing is left at or beside DST)."""
        self.partial.__exit__(exc_type, exc, tb)

    # -- arrays ---------------------------------------------------------------------------------
    def array(self, role: str, shape: tuple[int, ...], dtype) -> np.memmap:
        """A writable .npy memory map for ``role`` (e.g. 'features', 'splits/train')."""
        self._add_role(role)
        return open_memmap(self.tmp / f"{role}.npy", mode="w+", dtype=np.dtype(dtype), shape=shape)

    def put(self, role: str, values: np.ndarray) -> None:
        """Store ``values`` (held in RAM) under ``role``, by plain file writes."""
        values = np.asarray(values)
        with self.appender(role, values.dtype, values.shape[1:]) as out:
            out.append(values)

    def appender(self, role: str, dtype, row_shape: tuple[int, ...] = ()) -> NpyAppender:
        """``role`` written block by block, its length fixed when closed: the file ``put`` writes,
        for an array too large to hold."""
        self._add_role(role)
        return NpyAppender(self.tmp / f"{role}.npy", dtype, row_shape)

    def rows(self, role: str, shape: tuple[int, ...], dtype) -> NpyRows:
        """``role`` of known ``shape`` written front to back by plain file writes: the file
        ``array`` gives, byte for byte, without a memory map's pages in the resident set."""
        self._add_role(role)
        return NpyRows(self.tmp / f"{role}.npy", dtype, shape)

    def _add_role(self, role: str) -> None:
        (self.tmp / role).parent.mkdir(parents=True, exist_ok=True)
        if role not in self._roles:
            self._roles.append(role)

    def scratch(self) -> Path:
        """A folder for temporary files beside the dataset being written: inside the partial
        directory, so it goes with it on an error and after the commit, and never into DST."""
        folder = self.partial.root / SCRATCH
        folder.mkdir(exist_ok=True)
        return folder

    # -- structure ------------------------------------------------------------------------------
    def write_graph(
        self, src: np.ndarray, dst: np.ndarray, num_nodes: int, policy: EdgePolicy = EdgePolicy()
    ) -> EdgeReport:
        """Clean an edge list held in RAM with ``policy`` and store CSC, CSR and in-degrees."""
        return self.write_edges(EdgeStream.of(src, dst), num_nodes, policy)

    def write_edges(
        self, stream: EdgeStream, num_nodes: int, policy: EdgePolicy = EdgePolicy(), *, memory: int = BUILD_MEMORY_BYTES
    ) -> EdgeReport:
        """Store CSC, CSR and in-degrees of streamed edges, holding about ``memory`` bytes at once."""
        if num_nodes <= 0:
            raise UsageError("the graph has no nodes")
        built = build_graph(stream, num_nodes, policy, self.tmp, memory=memory)
        self.num_nodes, self.num_edges, self.undirected = num_nodes, built.report.stored, policy.undirected
        self.index_dtype = built.index_dtype
        for role in (*GRAPH_FILES, "degree"):
            if role not in self._roles:
                self._roles.append(role)
        return built.report

    def write_like(self, meta: DatasetMeta) -> None:
        """Take an existing dataset's sizes and settings (a dataset rewritten in another form,
        e.g. reordered): its arrays then go in through ``array``/``put`` under their roles."""
        self.num_nodes, self.num_edges, self.undirected = meta.num_nodes, meta.num_edges, meta.undirected
        self.index_dtype, self.num_classes = meta.index_dtype, meta.num_classes
        self.edge_weight, self.hetero, self.node_order = meta.edge_weight, meta.hetero, meta.node_order

    def write_edge_weights(self, name: str, weights: np.ndarray) -> None:
        """Sampling weights named ``name``, one per stored edge in edge-id order (finite, >= 0),
        kept in CSC order beside the structure so the sampler reads them where it walks."""
        self._require_graph()
        weights = np.asarray(weights)
        if weights.shape != (self.num_edges,):
            raise UsageError(f"{name}: one weight per edge ({self.num_edges}), not shape {weights.shape}")
        if weights.dtype.kind not in "biuf" or not np.isfinite(weights).all() or (weights < 0).any():
            raise UsageError(f"{name}: edge weights must be finite numbers >= 0")
        eid = np.load(self.tmp / "csc/eid.npy", mmap_mode="r")
        self.put(WEIGHT_FILE, weights.astype(np.float32)[eid])
        self.edge_weight = name

    def features(self, dim: int, dtype: str = "float32") -> np.memmap:
        """A writable memory map of the feature matrix (rows filled in any order)."""
        self._check_features(dim, dtype)
        return self.array("features", (self._require_graph(), dim), dtype)

    def feature_rows(self, dim: int, dtype: str = "float32") -> NpyAppender:
        """The feature matrix written row block by row block, in node order, through plain file
        writes: a matrix larger than RAM never enters the resident set. Close it before commit."""
        self._check_features(dim, dtype)
        return self.appender("features", dtype, (dim,))

    def _check_features(self, dim: int, dtype: str) -> None:
        self._require_graph()
        if dtype not in ("float32", "float16"):
            raise UsageError(f"feature dtype {dtype!r} is not supported; use float32 or float16")
        if dim <= 0:
            raise UsageError("feature dimension must be positive")

    def write_labels(self, labels: np.ndarray, num_classes: int | None = None) -> None:
        """Integer class labels, -1 for unlabelled nodes."""
        self._require_graph()
        labels = np.asarray(labels)
        if labels.shape != (self.num_nodes,):
            raise UsageError(f"labels have shape {labels.shape}, expected ({self.num_nodes},)")
        if labels.dtype.kind not in "iu":
            raise UsageError(f"labels must be integer class ids, got dtype {labels.dtype}")
        labels = labels.astype(np.int64)
        if len(labels) and labels.min() < -1:
            raise UsageError("labels must be class ids >= 0, or -1 for unlabelled nodes")
        self.num_classes = int(labels.max()) + 1 if num_classes is None else num_classes
        if len(labels) and labels.max() >= self.num_classes:
            raise UsageError(f"label {int(labels.max())} is not below num_classes={self.num_classes}")
        self.put("labels", labels)

    def write_split(self, name: str, nodes: np.ndarray) -> None:
        """A split as node ids (or a boolean mask over all nodes), stored sorted and unique."""
        self._require_graph()
        if name not in SPLITS:
            raise UsageError(f"unknown split {name!r}; use one of {', '.join(SPLITS)}")
        nodes = np.asarray(nodes)
        if nodes.dtype == bool:
            if nodes.shape != (self.num_nodes,):
                raise UsageError(f"{name} mask has shape {nodes.shape}, expected ({self.num_nodes},)")
            nodes = np.flatnonzero(nodes)
        nodes = np.unique(nodes.astype(np.int64))
        if len(nodes) and (nodes[0] < 0 or nodes[-1] >= self.num_nodes):
            raise UsageError(f"{name} split holds node ids outside [0, {self.num_nodes})")
        self.put(f"splits/{name}", nodes.astype(self.index_dtype))

    def _require_graph(self) -> int:
        """The node count, once the graph is written."""
        if self.num_nodes is None:
            raise RuntimeError("write_graph() must come first")
        return self.num_nodes

    # -- commit ---------------------------------------------------------------------------------
    def commit(self, *, source: str = "") -> DatasetMeta:
        """Checksum every file, write meta.json, and move the directory into place."""
        num_nodes = self._require_graph()
        if "labels" not in self._roles:
            self.write_labels(np.full(num_nodes, -1, dtype=np.int64), num_classes=0)
        if "features" not in self._roles:
            raise RuntimeError("features() must be written before commit()")
        files = {}
        for role in self._roles:
            path = self.tmp / f"{role}.npy"
            arr = np.load(path, mmap_mode="r")
            files[role] = FileEntry(
                path=f"{role}.npy",
                dtype=arr.dtype.name,
                shape=arr.shape,
                bytes=path.stat().st_size,
                blake2b=file_digest(path),
            )
            del arr
            fsync_path(path)
        feat = files["features"]
        meta = DatasetMeta(
            name=self.name,
            num_nodes=num_nodes,
            num_edges=self.num_edges,
            feature_dim=feat.shape[1],
            feature_dtype=feat.dtype,
            num_classes=self.num_classes,
            index_dtype=self.index_dtype,
            undirected=self.undirected,
            source=source,
            edge_weight=self.edge_weight,
            hetero=self.hetero,
            node_order=self.node_order,
            files=files,
        )
        write_model(self.tmp / "meta.json", meta)
        self.partial.commit()
        return meta
