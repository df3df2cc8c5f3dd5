"""``DatasetSource``: one RemoteGNN dataset answering the store's requests in this process.

The same object backs a local store (``RemoteFeatureStore.local``) and the store server, so both
read features and sample exactly alike: feature rows through a ``FeatureCache`` (hot rows in RAM,
the rest from the memory-mapped ``features.npy``), labels from ``labels.npy``, structure from the
memory-mapped CSC/CSR, and neighbourhoods with ``remotegnn.sampling.NeighborSampler``.

It is safe to call from several threads at once (the server runs one per client): the cache's
rows are shared but each thread gathers through its own view with its own scratch buffers, and
samplers (each holds an O(N) scratch array) are lent from a pool, so there are only as many as
there are concurrent requests. It imports no torch, so a server process starts fast and small.

A reordered dataset (``remotegnn reorder``) is served in the user's node ids: rows and seeds
asked for are mapped to where they are stored, and sampled ``n_id`` and edges mapped back.

Pickling keeps only the (absolute) path and the cache settings; the copy reopens the dataset (cheap: memory
maps) and builds its cache on first use. Forked DataLoader workers instead inherit the parent's
already built cache, copy-on-write.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numba
import numpy as np

from remotegnn.cache import POLICIES, FeatureCache, rank_nodes
from remotegnn.pyg.protocol import AttrInfo, DatasetInfo, check_rows
from remotegnn.sampling import NeighborSampler, SampledSubgraph
from remotegnn.store import Compressed, GraphDataset

if TYPE_CHECKING:
    from remotegnn.volume import FeatureVolume

FEATURES, LABELS = "x", "y"
RELABEL_BLOCK = 1 << 22  # ids relabelled per step


class DatasetSource:
    """Features (``x``), labels (``y``) and structure of the dataset at ``path``.

    ``cache_bytes`` of RAM hold the hottest feature rows by ``policy`` (degree, presample, auto, none);
    the cache is built on the first feature read (``warm()`` builds it now)."""

    def __init__(self, path: str | os.PathLike[str], *, cache_bytes: int = 0, policy: str = "degree"):
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must be >= 0, not {cache_bytes}")
        if policy not in POLICIES:
            raise ValueError(f"unknown cache policy {policy!r}; use one of {', '.join(POLICIES)}")
        self.path, self.cache_bytes, self.policy = Path(path).absolute(), int(cache_bytes), policy
        self.dataset = GraphDataset.open(self.path)
        self._lock = threading.Lock()
        self._threads = threading.local()
        self._cache: FeatureCache | None = None
        self._samplers: dict[tuple[tuple[int, ...], bool], list[NeighborSampler]] = {}

    def __getstate__(self) -> dict:
        return {"path": str(self.path), "cache_bytes": self.cache_bytes, "policy": self.policy}

    def __setstate__(self, state: dict) -> None:
        DatasetSource.__init__(self, state["path"], cache_bytes=state["cache_bytes"], policy=state["policy"])

    def __repr__(self) -> str:
        return f"DatasetSource({str(self.path)!r}, cache_bytes={self.cache_bytes}, policy={self.policy!r})"

    @cached_property
    def info(self) -> DatasetInfo:
        meta = self.dataset.meta
        return DatasetInfo(
            name=meta.name,
            num_nodes=meta.num_nodes,
            num_edges=meta.num_edges,
            attrs={
                FEATURES: AttrInfo(dtype=meta.feature_dtype, shape=(meta.num_nodes, meta.feature_dim)),
                LABELS: AttrInfo(dtype="int64", shape=(meta.num_nodes,)),
            },
        )

    # -- features -------------------------------------------------------------------------------
    def warm(self) -> FeatureCache:
        """The shared cache, built once (under a lock: two threads must not both build it)."""
        with self._lock:
            if self._cache is None:
                if self.cache_bytes == 0 or self.policy == "none":
                    self._cache = FeatureCache.empty(self.dataset)
                else:
                    capacity = self.cache_bytes // self.dataset.meta.row_bytes
                    ranking = rank_nodes(self.dataset, self.policy, capacity=capacity)
                    self._cache = FeatureCache.build(
                        self.dataset, self.cache_bytes, ranking, policy=self.policy, progress=False
                    )
            return self._cache

    def _gatherer(self) -> FeatureCache:
        """This thread's view of the cache: shared rows, private scratch buffers."""
        view = getattr(self._threads, "cache", None)
        if view is None:
            shared = self.warm()
            view = self._threads.cache = FeatureCache(shared.dataset, shared.policy, shared.slot, shared.rows)
        return view

    def spec(self, attr: str) -> AttrInfo:
        """An attribute's dtype and shape (KeyError naming it if the dataset has no such attribute)."""
        spec = self.info.attrs.get(attr)
        if spec is None:
            raise KeyError(
                f"attribute {attr!r} is not in dataset {self.info.name!r} (it has {', '.join(self.info.attrs)})"
            )
        return spec

    def read_into(self, attr: str, rows: np.ndarray, out: np.ndarray, volume: FeatureVolume | None = None) -> None:
        """Fill ``out`` with the rows of ``attr`` (checked: known attribute, rows in range).
        Feature rows the cache misses are read from ``volume`` when given (the store server's
        emulated cloud volume), else from the memory-mapped file."""
        self.spec(attr)
        check_rows(rows, self.info.num_nodes, f"attribute {attr!r}")
        rows = self.dataset.to_positions(rows)
        if attr == FEATURES:
            self._gatherer().gather(rows, out, volume)
        else:
            np.take(self.dataset.labels, rows, out=out)

    def read(self, attr: str, rows: np.ndarray) -> np.ndarray:
        """The rows of ``attr`` in a new array."""
        spec = self.spec(attr)
        out = np.empty((len(rows), *spec.shape[1:]), dtype=spec.dtype)
        self.read_into(attr, rows, out)
        return out

    def read_many(self, items: list[tuple[str, np.ndarray]]) -> list[np.ndarray]:
        """Rows of several attributes (the server's interface; here simply one read each)."""
        return [self.read(attr, rows) for attr, rows in items]

    # -- structure ------------------------------------------------------------------------------
    @contextmanager
    def sampled(
        self, seeds: np.ndarray, num_neighbors: list[int], replace: bool, keys: tuple[int, ...]
    ) -> Iterator[SampledSubgraph]:
        """A k-hop sample around ``seeds`` drawn with ``keys`` (checked: seeds in range); its arrays
        are views of a pooled sampler's buffers, valid inside the block."""
        check_rows(seeds, self.info.num_nodes, "seed nodes")
        key = (tuple(int(f) for f in num_neighbors), bool(replace))
        with self._lock:
            idle = self._samplers.setdefault(key, [])
            sampler = idle.pop() if idle else None
        if sampler is None:
            sampler = NeighborSampler(self.dataset.csc, list(key[0]), replace=key[1])
        try:
            sub = sampler.sample(self.dataset.to_positions(seeds), *keys)
            yield (
                sub if self.dataset.user_ids is None else dataclasses.replace(sub, n_id=self.dataset.to_user(sub.n_id))
            )
        finally:
            with self._lock:
                self._samplers[key].append(sampler)

    def sample(
        self, seeds: np.ndarray, num_neighbors: list[int], replace: bool, keys: tuple[int, ...]
    ) -> SampledSubgraph:
        """A k-hop sample as arrays the caller owns."""
        with self.sampled(seeds, num_neighbors, replace, keys) as sub:
            return sub.copy()

    def edges(self, layout: str) -> tuple[np.ndarray, np.ndarray]:
        """The whole structure as PyG's (row, col) pair for ``layout``: coo (source, target) in
        edge-id order; csr (rowptr, col); csc (row, colptr). int64 arrays the caller owns."""
        if layout == "coo":
            edge_index = self.dataset.edge_index()
            return self.dataset.to_user(edge_index[0]), self.dataset.to_user(edge_index[1])
        if layout == "csr":
            return self._in_user_ids(self.dataset.csr)
        if layout == "csc":
            indptr, indices = self._in_user_ids(self.dataset.csc)
            return indices, indptr
        raise ValueError(f"unknown edge layout {layout!r}; use coo, csr or csc")

    def _in_user_ids(self, compressed: Compressed) -> tuple[np.ndarray, np.ndarray]:
        """(indptr, indices) as int64 over the user's node ids (a reordered dataset is put back)."""
        indptr, indices, _ = compressed
        positions, user_ids = self.dataset.positions, self.dataset.user_ids
        if positions is None or user_ids is None:
            return np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int64)
        in_id_order = np.zeros(len(indptr), dtype=np.int64)
        np.cumsum(np.diff(indptr)[positions], out=in_id_order[1:])
        out = np.empty(len(indices), dtype=np.int64)
        _move_segments(np.asarray(indptr), positions, in_id_order, np.asarray(indices), out)
        _relabel(out, np.asarray(user_ids, dtype=np.int64))
        return in_id_order, out


@numba.njit(nogil=True, cache=True)
def _move_segments(indptr, order, new_indptr, values, out):
    """Segment v of ``out`` = segment ``order[v]`` of ``values``, in its own order."""
    for v in range(order.shape[0]):
        src = indptr[order[v]]
        dst = new_indptr[v]
        out[dst : new_indptr[v + 1]] = values[src : src + new_indptr[v + 1] - dst]


def _relabel(ids: np.ndarray, mapping: np.ndarray) -> None:
    """``ids[i] = mapping[ids[i]]`` in place, a block at a time (no second full-size array)."""
    for start in range(0, len(ids), RELABEL_BLOCK):
        block = ids[start : start + RELABEL_BLOCK]
        np.take(mapping, block, out=block)  # buffered, so reading and writing one block is safe
