"""Rewrite a dataset with its nodes stored in a locality order (``remotegnn reorder``).

Node ``order[new]`` is stored as row ``new`` of every node array, and ids inside the structure
and the splits are relabelled to match. What stays as it was, so a reordered dataset trains to
the same batches as the original for the same draws:

- each node's neighbour list keeps its order (the sampler draws positions within it);
- edge ids (``eid``) are unchanged: they are the user's;
- a split keeps the order its nodes were listed in (an epoch permutes positions within it);
- ``order/ids`` holds the user's id of every stored node, which the loaders map back to.
"""

from __future__ import annotations

import os
import time

import numba
import numpy as np
from pydantic import BaseModel, ConfigDict, computed_field

from foundation.errors import UsageError
from foundation.progress import track
from remotegnn.store.meta import ORDER_FILE, WEIGHT_FILE, DatasetMeta
from remotegnn.store.orders import ORDERS, node_order
from remotegnn.store.reader import GraphDataset, inverse_order
from remotegnn.store.writer import DatasetWriter

ROWS_PER_BLOCK = 1 << 16
"""Feature rows moved per step: a small scratch, and a progress bar that moves."""
RELABEL_BLOCK = 1 << 22
"""Ids relabelled per step."""


class ReorderResult(BaseModel):
    """What ``reorder`` wrote and what it cost."""

    model_config = ConfigDict(frozen=True)

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


@numba.njit(nogil=True, cache=True)
def move_segments(indptr, order, new_indptr, values, out):
    """Segment v of ``out`` = segment ``order[v]`` of ``values``, in its own order."""
    for v in range(order.shape[0]):
        src = indptr[order[v]]
        dst = new_indptr[v]
        out[dst : new_indptr[v + 1]] = values[src : src + new_indptr[v + 1] - dst]


def relabel(ids: np.ndarray, mapping: np.ndarray) -> None:
    """``ids[i] = mapping[ids[i]]`` in place, a block at a time (no second full-size array)."""
    for start in range(0, len(ids), RELABEL_BLOCK):
        block = ids[start : start + RELABEL_BLOCK]
        np.take(mapping, block, out=block)  # buffered, so reading and writing one block is safe


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
) -> ReorderResult:
    """Write ``dataset`` to ``dst`` with its nodes in ``order_name`` order (one of ``ORDERS``)."""
    check_order(order_name)
    meta = dataset.meta
    started = time.perf_counter()
    order = node_order(dataset, order_name)
    order_seconds = time.perf_counter() - started
    rank = inverse_order(order, f"the {order_name} order")  # stored position -> new position
    with DatasetWriter(dst, name=meta.name, overwrite=overwrite) as writer:
        writer.write_like(meta)
        writer.node_order = order_name
        steps = [("csc", dataset.csc), ("csr", dataset.csr)]
        for layout, (indptr, indices, eid) in track(steps, f"reordering by {order_name}", enabled=progress):
            new_indptr = writer.array(f"{layout}/indptr", indptr.shape, np.int64)
            new_indptr[0] = 0
            np.cumsum(np.diff(indptr)[order], out=new_indptr[1:])
            moves = [(f"{layout}/indices", indices), (f"{layout}/eid", eid)]
            if layout == "csc" and dataset.edge_weights is not None:
                moves.append((WEIGHT_FILE, dataset.edge_weights))
            for role, values in moves:
                out = writer.array(role, values.shape, values.dtype)
                move_segments(indptr, order, new_indptr, values, out)
                if role.endswith("indices"):  # neighbours become their new positions
                    relabel(out, rank.astype(values.dtype))
                out.flush()
        writer.put("degree", np.asarray(dataset.degree)[order])
        writer.put("labels", np.asarray(dataset.labels)[order])
        for split in meta.splits:
            writer.put(f"splits/{split}", rank[np.asarray(dataset.split(split))].astype(meta.index_dtype))
        user_ids = order if dataset.user_ids is None else np.asarray(dataset.user_ids)[order]
        writer.put(ORDER_FILE, user_ids.astype(meta.index_dtype))
        features = writer.array("features", (meta.num_nodes, meta.feature_dim), meta.feature_dtype)
        blocks = range(0, meta.num_nodes, ROWS_PER_BLOCK)
        for start in track(blocks, "moving feature rows", total=len(blocks), enabled=progress):
            stop = min(start + ROWS_PER_BLOCK, meta.num_nodes)
            features[start:stop] = dataset.features[order[start:stop]]
        features.flush()
        del features
        new_meta = writer.commit(source=meta.source)
    return ReorderResult(
        path=str(dst),
        meta=new_meta,
        order=order_name,
        order_seconds=round(order_seconds, 3),
        seconds=round(time.perf_counter() - started, 3),
    )
