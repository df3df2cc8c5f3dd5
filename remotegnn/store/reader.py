"""Open a dataset directory read-only, memory-mapped, after checking it against its meta.

Opening is cheap (sizes, .npy headers and a few bounds are checked, nothing is read in full),
so the server and the sampler can open large datasets instantly; ``verify()`` additionally
recomputes every checksum, which ``remotegnn info --verify`` runs.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import numpy as np
from pydantic import ValidationError

from contracts.dataset import ORDER_FILE, WEIGHT_FILE, DatasetMeta, FileEntry
from contracts.shards import ShardManifest
from foundation.errors import format_validation_error
from remotegnn.errors import DatasetError
from remotegnn.store.npy import scattered_map
from remotegnn.store.part import FEATURES, SHARD_FILE, held_digest, held_ranges, read_manifest
from remotegnn.store.writer import file_digest


class Compressed(NamedTuple):
    """A compressed adjacency: neighbours of node v are indices[indptr[v]:indptr[v+1]]."""

    indptr: np.ndarray
    indices: np.ndarray
    eid: np.ndarray


class GraphDataset:
    """A RemoteGNN dataset on disk. Arrays are read-only memory maps.

    Open one with ``GraphDataset.open(path)``, which reads and checks its ``meta.json`` first.

    Args:
        path: The dataset directory.
        meta: Its ``meta.json``, read.
        scattered: Map the arrays for scattered reads (:func:`remotegnn.store.npy.scattered_map`).
    """

    def __init__(self, path: Path, meta: DatasetMeta, *, scattered: bool = False):
        self.path = path
        self.meta = meta
        self.scattered = scattered
        """Arrays mapped for scattered reads (:func:`remotegnn.store.npy.scattered_map`)."""

    def for_gathers(self) -> GraphDataset:
        """The same dataset with its arrays mapped for scattered reads: for a pass that gathers
        rows in an order unrelated to the file's (``remotegnn reorder``) within a memory limit."""
        return GraphDataset(self.path, self.meta, scattered=True)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, verify: bool = False) -> GraphDataset:
        """The dataset in ``path``: its meta read, and the shapes and dtypes it lists checked.

        Args:
            path: A dataset directory (as `remotegnn convert` or `remotegnn synth` makes).
            verify: Also recompute every file's checksum (``verify``).

        Raises:
            DatasetError: ``path`` is not a readable dataset, or a file differs from its meta.
        """
        path = Path(path)
        meta_path = path / "meta.json"
        if not path.is_dir():
            raise DatasetError(
                f"{path} is not a dataset directory (make one with `remotegnn convert` or `remotegnn synth`)"
            )
        try:
            raw = meta_path.read_bytes()
        except OSError as exc:
            raise DatasetError(f"{meta_path} cannot be read ({exc.strerror}); is {path} a RemoteGNN dataset?") from exc
        try:
            meta = DatasetMeta.model_validate_json(raw)
        except ValidationError as exc:
            raise DatasetError(f"{meta_path} is invalid: {format_validation_error(exc)}") from exc
        dataset = cls(path, meta)
        dataset._check_files()
        if verify:
            dataset.verify()
        return dataset

    # -- checks ---------------------------------------------------------------------------------
    def _check_files(self) -> None:
        meta = self.meta
        n, e, idx = meta.num_nodes, meta.num_edges, meta.index_dtype
        expected = {
            "csc/indptr": ((n + 1,), "int64"),
            "csr/indptr": ((n + 1,), "int64"),
            "csc/indices": ((e,), idx),
            "csc/eid": ((e,), idx),
            "csr/indices": ((e,), idx),
            "csr/eid": ((e,), idx),
            "features": ((n, meta.feature_dim), meta.feature_dtype),
            "labels": ((n,), "int64"),
            "degree": ((n,), idx),
            WEIGHT_FILE: ((e,), "float32"),
            ORDER_FILE: ((n,), idx),
        }
        for role, entry in meta.files.items():
            shape, dtype = expected.get(role, (None, idx))
            if shape is not None and (tuple(entry.shape) != shape or entry.dtype != dtype):
                raise DatasetError(
                    f"{self.path}: meta.json lists {role} as {entry.dtype}{list(entry.shape)}, "
                    f"which disagrees with the dataset's sizes (expected {dtype}{list(shape)})"
                )
            self._check_file(role, entry)
        for layout in ("csc", "csr"):
            indptr = self._load(f"{layout}/indptr")
            if indptr[0] != 0 or indptr[-1] != e:
                raise DatasetError(
                    f"{self.path}: {layout}/indptr does not span the {e:,} edges; the dataset is corrupt"
                )
        for split in meta.splits:
            ids = self._load(f"splits/{split}")
            if len(ids) and (ids.min() < 0 or ids.max() >= n):
                raise DatasetError(f"{self.path}: split {split} holds node ids outside [0, {n})")

    def _check_file(self, role: str, entry: FileEntry) -> None:
        path = self.path / entry.path
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise DatasetError(f"{path} is missing ({exc.strerror}); the dataset is incomplete") from exc
        if size != entry.bytes:
            raise DatasetError(
                f"{path} has {size:,} bytes but meta.json says {entry.bytes:,}: "
                "the file is truncated or was replaced; convert the dataset again"
            )
        try:
            arr = np.load(path, mmap_mode="r")
        except (ValueError, OSError) as exc:
            raise DatasetError(f"{path} is not a readable .npy file: {exc}") from exc
        if arr.dtype.name != entry.dtype or tuple(arr.shape) != tuple(entry.shape):
            raise DatasetError(
                f"{path} holds {arr.dtype.name}{list(arr.shape)} but meta.json says {entry.dtype}{list(entry.shape)}"
            )

    def shard_manifest(self) -> ShardManifest | None:
        """What part of the dataset this copy holds, from its ``shard.json`` (``remotegnn fetch
        --shard``, :mod:`remotegnn.store.part`): ``index`` is the memory machine whose rows the
        feature file holds (holes elsewhere read as zeros), ``structure_only`` a copy with no rows.
        None: a whole copy. A record that is malformed, has fields this version does not know or
        disagrees with ``meta.json`` raises DatasetError. A server checks ``index`` against its rank
        before it serves a row."""
        return read_manifest(self.path, self.meta)

    def verify(self) -> None:
        """Recompute every file's checksum; raise DatasetError naming the first that differs. A
        staged part's feature file is checked by the digest of the bytes it holds (``shard.json``),
        as meta.json's covers the whole file."""
        manifest = self.shard_manifest()
        for role, entry in self.meta.files.items():
            if manifest is not None and role == FEATURES:
                if held_digest(self.path / entry.path, held_ranges(manifest, self.features_offset)) != (
                    manifest.features_blake2b
                ):
                    raise DatasetError(
                        f"{self.path / entry.path}: checksum mismatch in the rows this part holds ({SHARD_FILE}), "
                        "the file is corrupt; fetch the dataset again"
                    )
                continue
            if file_digest(self.path / entry.path) != entry.blake2b:
                raise DatasetError(
                    f"{self.path / entry.path}: checksum mismatch, the file is corrupt; convert the dataset again"
                )

    # -- arrays ---------------------------------------------------------------------------------
    def _load(self, role: str) -> np.ndarray:
        path = self.path / self.meta.files[role].path
        return scattered_map(path) if self.scattered else np.load(path, mmap_mode="r")

    @cached_property
    def csc(self) -> Compressed:
        return Compressed(self._load("csc/indptr"), self._load("csc/indices"), self._load("csc/eid"))

    @cached_property
    def edge_weights(self) -> np.ndarray | None:
        """The sampling weights in CSC order (``meta.edge_weight`` names them), or None."""
        return self._load(WEIGHT_FILE) if self.meta.edge_weight is not None else None

    @cached_property
    def edge_types(self) -> np.ndarray | None:
        """A heterogeneous graph's edge type per CSC position (edge ids are grouped by type), or None."""
        hetero = self.meta.hetero
        if hetero is None:
            return None
        dtype = np.int8 if len(hetero.edge_types) < 128 else np.int32
        return np.searchsorted(np.asarray(hetero.edge_offsets[1:]), self.csc.eid, side="right").astype(dtype)

    @cached_property
    def csr(self) -> Compressed:
        return Compressed(self._load("csr/indptr"), self._load("csr/indices"), self._load("csr/eid"))

    @cached_property
    def features(self) -> np.ndarray:
        return self._load("features")

    @cached_property
    def labels(self) -> np.ndarray:
        return self._load("labels")

    @cached_property
    def degree(self) -> np.ndarray:
        """In-degree (the number of neighbours the sampler can draw from)."""
        return self._load("degree")

    def split(self, name: str) -> np.ndarray:
        """The split's nodes as stored positions (what the sampler and the caches index)."""
        if f"splits/{name}" not in self.meta.files:
            known = ", ".join(self.meta.splits) or "none"
            raise DatasetError(f"{self.path} has no {name!r} split (it has: {known})")
        return self._load(f"splits/{name}")

    # -- the user's node ids (a reordered dataset stores nodes at other positions) ---------------
    @cached_property
    def user_ids(self) -> np.ndarray | None:
        """The user's id of each stored node (``remotegnn reorder``), or None: stored in id order."""
        return self._load(ORDER_FILE) if self.meta.node_order is not None else None

    @cached_property
    def positions(self) -> np.ndarray | None:
        """Where each user node id is stored (the inverse of ``user_ids``), or None."""
        ids = self.user_ids
        if ids is None:
            return None
        return inverse_order(ids, f"{self.path}: {ORDER_FILE}")

    def to_positions(self, ids: np.ndarray) -> np.ndarray:
        """User node ids -> stored positions (the same array when the dataset is in id order)."""
        positions = self.positions
        return ids if positions is None else positions[ids]

    def to_user(self, positions: np.ndarray) -> np.ndarray:
        """Stored positions -> user node ids (the same array when the dataset is in id order)."""
        ids = self.user_ids
        return positions if ids is None else np.asarray(ids[positions], dtype=np.int64)

    def user_split(self, name: str) -> np.ndarray:
        """The split as the user's node ids, in the order the user gave them."""
        return self.to_user(np.asarray(self.split(name), dtype=np.int64))

    @property
    def features_path(self) -> Path:
        return self.path / self.meta.files["features"].path

    @cached_property
    def features_offset(self) -> int:
        """Byte offset of row 0 in features.npy (the .npy header's length), for direct reads."""
        return int(np.load(self.features_path, mmap_mode="r").offset)

    def edge_index(self) -> np.ndarray:
        """All edges as [2, E] (source, target) in original edge-id order."""
        indptr, indices, eid = self.csc
        out = np.empty((2, self.meta.num_edges), dtype=np.int64)
        targets = np.repeat(np.arange(self.meta.num_nodes, dtype=np.int64), np.diff(indptr))
        out[0, eid] = indices
        out[1, eid] = targets
        return out


def inverse_order(order: np.ndarray, what: str) -> np.ndarray:
    """``inverse[order[i]] = i``, or a DatasetError naming ``what`` if ``order`` is not a permutation."""
    n = len(order)
    inverse = np.full(n, -1, dtype=np.int64)
    order = np.asarray(order, dtype=np.int64)
    if n and (order.min() < 0 or order.max() >= n):
        raise DatasetError(f"{what} holds ids outside [0, {n}); the dataset is corrupt")
    inverse[order] = np.arange(n, dtype=np.int64)
    if (inverse < 0).any():
        raise DatasetError(f"{what} repeats node ids, so it is not an order of the nodes; the dataset is corrupt")
    return inverse
