"""A heterogeneous graph's edge types, each in its own file, streamed into one id space.

Node type t's nodes hold ids from its offset on (types one after the other), so an edge file's
ids, which count from 0 within their node types, are shifted by their types' offsets; an id at
or beyond its type's count is refused here, since once shifted it would name a node of the next
type without any error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from contracts.dataset import EdgeType, HeteroMeta, NodeType
from remotegnn.errors import ConvertError
from remotegnn.store.build import EDGE_BLOCK, EdgeStream
from remotegnn.store.npy import NpyReader


@dataclass(frozen=True)
class TypedEdges:
    """One edge type's file and the (first id, count) of its source and target node types."""

    reader: NpyReader
    sources: tuple[int, int]
    targets: tuple[int, int]

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Its edges in the shared id space; an id beyond its own type is refused here, since in
        the shared space it would silently name a node of the next type."""
        done = 0
        for src, dst in self.reader.pairs(EDGE_BLOCK):
            for ids, (_, count), end in ((src, self.sources, "source"), (dst, self.targets, "target")):
                bad = np.flatnonzero((ids < 0) | (ids >= count))
                if len(bad):
                    raise ConvertError(
                        f"{self.reader.what} edge {done + int(bad[0])}: {end} id {int(ids[bad[0]])} is outside "
                        f"[0, {count:,}) of its node type"
                    )
            done += len(src)
            yield src.astype(np.int64) + self.sources[0], dst.astype(np.int64) + self.targets[0]


def typed_edges(types: list[TypedEdges], count: int) -> EdgeStream:
    bounds = np.cumsum([0, *(t.reader.pair_count for t in types)])

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for edge_type in types:
            yield from edge_type.chunks()

    def locate(i: int) -> str:
        k = int(np.searchsorted(bounds, i, side="right")) - 1
        return f"{types[k].reader.what} edge {i - int(bounds[k])}"

    return EdgeStream(count, chunks, locate)


def hetero_meta(
    counts: dict[str, int], dims: dict[str, int], labelled: str, splits: list[str], edge_types: list[EdgeType]
) -> HeteroMeta:
    """Node types in ``counts``' order (``dims`` their feature columns, 0 when absent), of which
    ``labelled`` alone carries labels and the splits, as in the published academic graphs."""
    return HeteroMeta(
        node_types=[
            NodeType(
                name=t,
                count=count,
                feature_dim=dims.get(t, 0),
                labelled=t == labelled,
                splits=list(splits) if t == labelled else [],
            )
            for t, count in counts.items()
        ],
        edge_types=edge_types,
    )
