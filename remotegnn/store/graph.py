"""From an edge list to the CSC and CSR the sampler walks, under an explicit edge policy.

Policy (documented in docs/remotegnn.md): node ids outside [0, num_nodes) are always an error.
Self loops and duplicate edges are dropped by default and counted in the report, since a
sampler that draws the same neighbour twice, or a node as its own neighbour, biases the batch;
``keep`` stores them as given (the PyG round trip uses it, so it is exact) and ``error``
refuses the input. ``undirected`` reads each line as an unordered pair and stores both
directions, as PyG's ``to_undirected`` does; a pair given in both directions is then a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
from pydantic import BaseModel, ConfigDict

from remotegnn.errors import ConvertError


class EdgePolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    self_loops: Literal["keep", "drop", "error"] = "drop"
    duplicates: Literal["keep", "drop", "error"] = "drop"
    undirected: bool = False


KEEP_AS_GIVEN = EdgePolicy(self_loops="keep", duplicates="keep")


@dataclass(frozen=True)
class EdgeReport:
    """What the policy did, so converters can tell the user."""

    given: int
    self_loops_dropped: int
    duplicates_dropped: int
    stored: int

    def summary(self) -> str:
        return (
            f"{self.given:,} edges read, {self.self_loops_dropped:,} self loops and "
            f"{self.duplicates_dropped:,} duplicates dropped, {self.stored:,} directed edges stored"
        )


def check_range(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> None:
    """Refuse node ids outside [0, num_nodes), naming the first offending edge."""
    for name, ids in (("source", src), ("target", dst)):
        if len(ids) == 0:
            continue
        bad = np.flatnonzero((ids < 0) | (ids >= num_nodes))
        if len(bad):
            i = int(bad[0])
            raise ConvertError(
                f"edge {i}: {name} node id {int(ids[i])} is outside [0, {num_nodes}) "
                f"({len(bad):,} such edges); check the node count or the id column"
            )


def apply_policy(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, policy: EdgePolicy
) -> tuple[np.ndarray, np.ndarray, EdgeReport]:
    """Validate and clean an edge list; returns int64 (src, dst) in original order and a report."""
    src = np.asarray(src).astype(np.int64, copy=False).ravel()
    dst = np.asarray(dst).astype(np.int64, copy=False).ravel()
    if src.shape != dst.shape:
        raise ConvertError(f"sources and targets differ in length ({len(src):,} vs {len(dst):,})")
    check_range(src, dst, num_nodes)
    given = len(src)

    loops = src == dst
    n_loops = int(loops.sum())
    if n_loops and policy.self_loops == "error":
        i = int(np.flatnonzero(loops)[0])
        raise ConvertError(
            f"edge {i} is a self loop on node {int(src[i])} ({n_loops:,} in all); pass --self-loops drop or keep"
        )
    if n_loops and policy.self_loops == "drop":
        src, dst = src[~loops], dst[~loops]
    dropped_loops = n_loops if policy.self_loops == "drop" else 0

    if policy.undirected:
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        keys = lo * num_nodes + hi
    else:
        keys = src * num_nodes + dst
    _, first = np.unique(keys, return_index=True)
    n_dups = len(keys) - len(first)
    if n_dups and policy.duplicates == "error":
        mask = np.ones(len(keys), dtype=bool)
        mask[first] = False
        i = int(np.flatnonzero(mask)[0])
        raise ConvertError(
            f"edge ({int(src[i])}, {int(dst[i])}) appears more than once ({n_dups:,} duplicates); "
            "pass --duplicates drop or keep"
        )
    dropped_dups = 0
    if n_dups and policy.duplicates == "drop":
        first.sort()
        src, dst = src[first], dst[first]
        dropped_dups = n_dups

    if policy.undirected:
        loops = src == dst
        rev_src, rev_dst = dst[~loops], src[~loops]
        src, dst = np.concatenate([src, rev_src]), np.concatenate([dst, rev_dst])
    return src, dst, EdgeReport(given, dropped_loops, dropped_dups, len(src))


@numba.njit(cache=True, nogil=True)
def _counting_sort(major, minor, indptr, indices, eid):
    """Stable counting sort of edges by ``major``: fills a compressed layout, O(E)."""
    n = len(indptr) - 1
    for i in range(n + 1):
        indptr[i] = 0
    for e in range(len(major)):
        indptr[major[e] + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    cursor = indptr[:-1].copy()
    for e in range(len(major)):
        m = major[e]
        p = cursor[m]
        indices[p] = minor[e]
        eid[p] = e
        cursor[m] = p + 1


def compress(major: np.ndarray, minor: np.ndarray, indptr: np.ndarray, indices: np.ndarray, eid: np.ndarray) -> None:
    """Fill (indptr, indices, eid) in place; outputs may be memory-mapped files."""
    _counting_sort(major, minor, indptr, indices, eid)
