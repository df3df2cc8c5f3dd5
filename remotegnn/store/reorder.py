"""Rewrite a dataset with its nodes stored in a locality order (``remotegnn reorder``).

Node ``order[new]`` is stored as row ``new`` of every node array, and ids inside the structure
and the splits are relabelled to match. What stays as it was, so a reordered dataset trains to
the same batches as the original for the same draws:

- each node's neighbour list keeps its order (the sampler draws positions within it);
- edge ids (``eid``) are unchanged: they are the user's;
- a split keeps the order its nodes were listed in (an epoch permutes positions within it);
- ``order/ids`` holds the user's id of every stored node, which the loaders map back to.

The rewrite runs in about ``memory`` bytes (``REORDER_MEMORY_BYTES``) whatever the graph's size,
so a graph larger than RAM can be reordered, as it can be converted. The order and its inverse
are files in the partial directory's scratch folder (:mod:`remotegnn.store.orders`,
:func:`remotegnn.store.external.invert`); every output file is then written front to back, a
block of new positions at a time, from gathers out of the input mapped for scattered reads
(:func:`remotegnn.store.npy.scattered_map`): a block's feature rows, labels and degrees; its CSC
and CSR segments copied in windows of edges, their neighbours relabelled through the inverse;
each split's nodes. The output is byte for byte what
the earlier in-RAM rewrite wrote (tests keep that rewrite as the reference).
"""

from __future__ import annotations

import contextlib
import os
import time

import numba
import numpy as np
from pydantic import computed_field

from contracts.dataset import ORDER_FILE, WEIGHT_FILE, DatasetMeta
from foundation.errors import UsageError
from foundation.models import StrictModel
from foundation.progress import track
from remotegnn.store.external import Scratch, invert, spans
from remotegnn.store.npy import NpyReader
from remotegnn.store.orders import ORDERS, node_order
from remotegnn.store.reader import GraphDataset
from remotegnn.store.writer import DatasetWriter

REORDER_MEMORY_BYTES = 256 << 20
"""What a reorder's blocks may hold at once; its resident set stays near this plus the interpreter."""
NODE_BYTES = 64  # a block of new positions: old ids, segment starts and ends, gathered values
EDGE_BYTES = 32  # a window of edges: one file's values, their relabelled copy and its cast


class ReorderResult(StrictModel):
    """What ``reorder`` wrote and what it cost."""

    path: str
    meta: DatasetMeta
    order: str
    order_seconds: float
    """Computing the order alone."""
    seconds: float
    """The whole rewrite, order included."""

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented use on a property
    @property
    def seconds_per_million_edges(self) -> float:
        return round(self.seconds / max(self.meta.num_edges / 1e6, 1e-6), 3)


def check_order(name: str) -> None:
    if name not in ORDERS:
        raise UsageError(f"--order {name!r}: choose one of {', '.join(ORDERS)}")


def reorder(
    dataset: GraphDataset,
    dst: str | os.PathLike[str],
    order_name: str,
    *,
    overwrite: bool = False,
    progress: bool | None = None,
    memory: int = REORDER_MEMORY_BYTES,
) -> ReorderResult:
    """Write ``dataset`` to ``dst`` with its nodes in ``order_name`` order (one of ``ORDERS``),
    holding about ``memory`` bytes of blocks at once."""
    check_order(order_name)
    dataset = dataset.for_gathers()
    meta = dataset.meta
    started = time.perf_counter()
    with DatasetWriter(dst, name=meta.name, overwrite=overwrite) as writer:
        scratch = Scratch(writer.scratch(), memory)
        order_path = node_order(dataset, order_name, scratch)
        order_seconds = time.perf_counter() - started
        invert(order_path, scratch.path("rank"), scratch, f"the {order_name} order")
        order = np.load(order_path, mmap_mode="r")  # new position -> stored position
        rank = scratch.load("rank")  # stored position -> new position
        writer.write_like(meta)
        writer.node_order = order_name
        for layout in ("csc", "csr"):
            _move_structure(
                dataset, writer, layout, order, rank, scratch, f"reordering {layout} by {order_name}", progress
            )
        _move_nodes(dataset, writer, order, rank, scratch)
        _move_features(dataset, writer, order, scratch, progress)
        new_meta = writer.commit(source=meta.source)
    return ReorderResult(
        path=str(dst),
        meta=new_meta,
        order=order_name,
        order_seconds=round(order_seconds, 3),
        seconds=round(time.perf_counter() - started, 3),
    )


def _move_structure(
    dataset: GraphDataset,
    writer: DatasetWriter,
    layout: str,
    order: np.ndarray,
    rank: np.ndarray,
    scratch: Scratch,
    what: str,
    progress: bool | None,
) -> None:
    """``layout``'s pointers and segments (and the CSC's weights) in the new order: segment v is
    old segment ``order[v]`` in its own order, its neighbours relabelled to their new positions."""
    indptr, indices, eid = getattr(dataset, layout)
    moves = [(f"{layout}/indices", indices), (f"{layout}/eid", eid)]
    if layout == "csc" and dataset.edge_weights is not None:
        moves.append((WEIGHT_FILE, dataset.edge_weights))
    pointers = np.asarray(indptr)
    window = scratch.rows(EDGE_BYTES)
    with contextlib.ExitStack() as files:
        new_indptr = files.enter_context(writer.rows(f"{layout}/indptr", indptr.shape, np.int64))
        outs = [files.enter_context(writer.rows(role, values.shape, values.dtype)) for role, values in moves]
        new_indptr.append(np.zeros(1, dtype=np.int64))
        written = 0
        blocks = list(spans(len(order), scratch.rows(NODE_BYTES)))
        for start, stop in track(blocks, what, total=len(blocks), enabled=progress):
            old = np.asarray(order[start:stop])
            starts = pointers[old]
            ends = np.cumsum(pointers[old + 1] - starts)
            new_indptr.append(written + ends)
            total = int(ends[-1]) if len(ends) else 0
            for e0, e1 in spans(total, window):
                for (role, values), out in zip(moves, outs, strict=True):
                    part = _window(np.asarray(values), starts, ends, e0, e1)
                    if role.endswith("indices"):  # neighbours become their new positions
                        part = rank[part].astype(values.dtype)
                    out.append(part)
            written += total


@numba.njit(nogil=True, cache=True)
def _window(values, starts, ends, e0, e1):
    """Positions ``e0:e1`` of segments laid end to end: segment i is ``values[starts[i]:]``,
    ending at position ``ends[i]`` of the concatenation."""
    out = np.empty(e1 - e0, dtype=values.dtype)
    i = np.searchsorted(ends, e0, side="right")
    at = e0
    while at < e1:
        begin = ends[i - 1] if i > 0 else 0
        take = min(ends[i], e1) - at
        src = starts[i] + at - begin
        out[at - e0 : at - e0 + take] = values[src : src + take]
        at += take
        i += 1
    return out


def _move_nodes(
    dataset: GraphDataset, writer: DatasetWriter, order: np.ndarray, rank: np.ndarray, scratch: Scratch
) -> None:
    """Degrees and labels in the new order, the splits as new positions (each in the order its
    nodes were listed), and the user's id of each stored node."""
    meta, block = dataset.meta, scratch.rows(NODE_BYTES)
    with (
        writer.appender("degree", dataset.degree.dtype) as degree,
        writer.appender("labels", dataset.labels.dtype) as labels,
    ):
        for start, stop in spans(meta.num_nodes, block):
            old = np.asarray(order[start:stop])
            degree.append(dataset.degree[old])
            labels.append(dataset.labels[old])
    for split in meta.splits:
        nodes = NpyReader(dataset.path / meta.files[f"splits/{split}"].path)
        with writer.appender(f"splits/{split}", meta.index_dtype) as out:
            for part in nodes.blocks(block):
                out.append(rank[part].astype(meta.index_dtype))
    user_ids = dataset.user_ids
    with writer.appender(ORDER_FILE, meta.index_dtype) as out:
        for start, stop in spans(meta.num_nodes, block):
            old = np.asarray(order[start:stop])
            out.append((old if user_ids is None else user_ids[old]).astype(meta.index_dtype))


def _move_features(
    dataset: GraphDataset, writer: DatasetWriter, order: np.ndarray, scratch: Scratch, progress: bool | None
) -> None:
    """Feature rows in the new order, gathered a block of rows at a time and written in sequence."""
    meta = dataset.meta
    blocks = list(spans(meta.num_nodes, scratch.rows(2 * meta.row_bytes + 8)))
    with writer.rows("features", (meta.num_nodes, meta.feature_dim), meta.feature_dtype) as out:
        for start, stop in track(blocks, "moving feature rows", total=len(blocks), enabled=progress):
            out.append(dataset.features[np.asarray(order[start:stop])])
