"""Fixed-size slots in shared memory, and how big a batch's slot must be.

Segments are created with ``multiprocessing.shared_memory``, mapped, and unlinked at once: the
worker processes inherit the mapping through fork, so no name is left in /dev/shm even if every
process is killed (the kernel frees the memory with the last mapping). Slots are sized for the
worst batch the fanouts allow; tmpfs only backs pages that are written, so an unused worst case
costs address space, not RAM.
"""

from __future__ import annotations

import secrets
from multiprocessing import shared_memory

import numpy as np

from remotegnn.compact import worst_specs
from remotegnn.wire import TensorSpec, frame_size

PAGE = 4096
I64 = np.dtype(np.int64)


def batch_bounds(
    fanouts: list[int], batch_size: int, num_nodes: int, num_edges: int, replace: bool, disjoint: bool = False
) -> tuple[int, int]:
    """Most nodes and edges one batch can hold. Each node is a target in at most one hop, so a
    subgraph never has more than E edges without replacement (N * max fanout with it); with
    ``disjoint`` each seed has its own tree, bounded so."""
    if disjoint:
        nodes, edges = batch_bounds(fanouts, 1, num_nodes, num_edges, replace)
        return batch_size * nodes, batch_size * edges
    nodes = frontier = batch_size
    edges = 0
    for fanout in fanouts:
        if fanout == -1:
            return num_nodes, num_edges
        frontier *= fanout
        edges += frontier
        nodes += frontier
    edge_cap = num_nodes * max(fanouts) if replace else num_edges
    return min(nodes, num_nodes), min(edges, edge_cap)


def structure_specs(nodes: int, edges: int, seeds: int, hops: int, edge_ids: bool) -> list[TensorSpec]:
    """The largest sampled subgraph a slot holds (a blueprint, and the first part of a batch),
    in the compact encoding's widest case."""
    return worst_specs(nodes, edges, seeds, hops, edge_ids)


def batch_specs(
    nodes: int, edges: int, seeds: int, hops: int, dim: int, dtype, labels: bool, edge_ids: bool
) -> list[TensorSpec]:
    """The largest finished batch: the structure, feature rows ``x`` and (when the dataset has
    them) int64 labels ``y``, the widest they travel as."""
    specs = structure_specs(nodes, edges, seeds, hops, edge_ids) + part_specs(nodes, dim, dtype)
    return specs + [TensorSpec("y", I64, (nodes,))] if labels else specs


def part_specs(rows: int, dim: int, dtype) -> list[TensorSpec]:
    """A feature shard's share of a batch it did not sample: its rows of ``x``, in ``n_id`` order."""
    return [TensorSpec("x", np.dtype(dtype), (rows, dim))]


def slot_bytes(specs: list[TensorSpec]) -> int:
    return -(-frame_size(specs) // PAGE) * PAGE


class SharedRing:
    """``slots`` equal byte slots in one anonymous-after-creation shared-memory segment."""

    def __init__(self, slots: int, slot_size: int, label: str):
        self.slots, self.slot_size = slots, slot_size
        self._shm = shared_memory.SharedMemory(
            name=f"rgnn_{label}_{secrets.token_hex(6)}", create=True, size=slots * slot_size
        )
        self._shm.unlink()  # the mapping stays valid in this process and in forked children
        self._array: np.ndarray | None = np.ndarray((slots, slot_size), dtype=np.uint8, buffer=self._shm.buf)

    def slot(self, index: int) -> np.ndarray:
        assert self._array is not None, "slot of a closed ring"
        return self._array[index % self.slots]

    def close(self) -> None:
        """Unmap; views still held elsewhere (a batch the user kept) keep their pages alive."""
        self._array = None
        try:
            self._shm.close()
        except BufferError:
            pass  # exported views exist; the mapping goes when they are garbage collected
