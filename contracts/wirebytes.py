"""How big a batch's ids, edges and labels are on the wire: the compact batch encoding's integer
widths, shared by the data layer (which picks them per frame) and the planner (which prices them).

A batch's structure travels as the narrowest exact integers rather than as PyG's int64:

- ``n_id`` (stored positions) as int32 wherever the graph has fewer than 2**31 nodes;
- each edge as its source's index into the batch (uint16 for batches of at most 65,536 nodes,
  else int32) plus, per destination node, how many sampled edges end there (the sampler emits
  edges grouped by destination in ``n_id`` order, so the destinations are a run-length code):
  uint8 while no fanout exceeds 255, else int32;
- ``e_id`` only when the loader needs edge ids (edge attributes, bidirectional batches, or the
  user asks), as int32 wherever the graph has fewer than 2**31 edges;
- labels (class ids, -1 for unlabelled) in the narrowest signed type that holds the batch's.

The learner widens every one of them back to int64, so a batch equals the one int64 frames gave.
"""

from __future__ import annotations

import numpy as np

INT32_LIMIT = 2**31 - 1
UINT16_NODES = 2**16
"""Batches of at most this many nodes index them with uint16."""
REQUEST_ID_BYTES = 4
"""A row id the learner asks a memory machine for when it samples itself (int32 positions)."""
INT64_NODE_BYTES = 2 * 8
"""int64 frames: ``n_id`` and a label per node."""
INT64_EDGE_BYTES = 3 * 8
"""int64 frames: ``edge_index`` (two int64) and ``e_id`` per edge."""
FRAME_HEADER_BYTES = 52
"""A frame's fixed header (``remotegnn.wire``; a test holds the two equal)."""
TABLE_ENTRY_BYTES = 80
"""A frame's table entry per tensor (name, dtype, shape, offset, size)."""
FRAME_ALIGN = 64
"""The header with its table, and every tensor, start at a multiple of this."""
BATCH_FRAME_TENSORS = 8
"""A memory-sampled batch's frame: ``n_id``, ``src``, ``dst_count``, ``input_id``, the two per-hop
counts, ``x`` and ``y``; every other rank's frame, a request and a credit hold one tensor each."""
CREDIT_BYTES = 256
"""A learner's credit to one memory machine (a control frame of a few dozen bytes of JSON)."""

_SIGNED = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64))
_UNSIGNED = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.int32), np.dtype(np.int64))


def position_dtype(count: int) -> np.dtype:
    """Node positions (or edge ids) below ``count``: int32 where they fit, else int64."""
    return np.dtype(np.int32) if count - 1 <= INT32_LIMIT else np.dtype(np.int64)


def local_index_dtype(batch_nodes: int) -> np.dtype:
    """An index into a batch of ``batch_nodes`` nodes."""
    return np.dtype(np.uint16) if batch_nodes <= UINT16_NODES else position_dtype(batch_nodes)


def count_dtype(largest: int) -> np.dtype:
    """Counts of at most ``largest`` (edges ending at one destination)."""
    return next(d for d in _UNSIGNED if largest <= np.iinfo(d).max)


def signed_dtype(low: int, high: int) -> np.dtype:
    """The narrowest signed integer holding every value in [low, high]."""
    return next(d for d in _SIGNED if np.iinfo(d).min <= low and high <= np.iinfo(d).max)


def fanout_count_bytes(fanouts: list[int]) -> int:
    """Bytes of one destination's edge count: the largest fanout bounds it, unless one is -1 (all
    neighbours, bounded only by the degree)."""
    return count_dtype(INT32_LIMIT if -1 in fanouts else max(fanouts)).itemsize


def label_bytes(num_classes: int | None) -> int:
    """Bytes of one label (0 for a graph without labels)."""
    return signed_dtype(-1, num_classes - 1).itemsize if num_classes else 0


def compact_node_bytes(num_nodes: int, num_classes: int | None) -> int:
    """Bytes per sampled node in a compact frame: its position and its label."""
    return position_dtype(num_nodes).itemsize + label_bytes(num_classes)


def compact_edge_bytes(batch_nodes: float) -> int:
    """Bytes per sampled edge in a compact frame without edge ids: its source's local index."""
    return local_index_dtype(int(batch_nodes)).itemsize


def frame_overhead_bytes(tensors: int) -> float:
    """Mean bytes a frame of ``tensors`` tensors adds to their own: its header and table, and half
    an alignment for the table and for each tensor."""
    return FRAME_HEADER_BYTES + tensors * TABLE_ENTRY_BYTES + (tensors + 1) * FRAME_ALIGN / 2


def batch_overhead_bytes(memory_machines, learner_samples: bool):
    """Bytes each batch adds on the link besides its ids, edges, labels and rows: one frame from
    every memory machine (the sampling one's holds the structure) and a credit to each; a sampling
    learner sends each memory machine a request frame instead of receiving the structure. A few
    kilobytes a batch, which matters only where batches are small (an emulated cluster's)."""
    single = frame_overhead_bytes(1)
    if learner_samples:
        return memory_machines * (CREDIT_BYTES + 2 * single)
    return memory_machines * (CREDIT_BYTES + single) + frame_overhead_bytes(BATCH_FRAME_TENSORS) - single
