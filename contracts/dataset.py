"""``meta.json``: the versioned description of a RemoteGNN dataset directory.

The meta file is the contract between writers (convert, synth) and readers (the sampler, the
memory server, the profiler): it lists every array file with dtype, shape, byte size and a
BLAKE2b checksum, so a reader can refuse a truncated or corrupt dataset before it serves wrong
batches from it. It carries no timestamps, so a dataset made from the same input (or seed) is
byte-for-byte the same.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from contracts.profile import DTYPE_BYTES
from foundation.models import StrictModel

DATASET_KIND: Final = "remotegnn.dataset"
DATASET_VERSION: Final = 1
FeatureDtype = Literal["float32", "float16"]
IndexDtype = Literal["int32", "int64"]
SPLITS = ("train", "val", "test")

# The array files of a dataset, by role. CSC groups edges by target (incoming neighbours: what
# the sampler walks, as PyG does); CSR groups them by source. ``eid`` holds original edge ids.
GRAPH_FILES = ("csc/indptr", "csc/indices", "csc/eid", "csr/indptr", "csr/indices", "csr/eid")
NODE_FILES = ("features", "labels", "degree")
WEIGHT_FILE = "csc/weight"
"""Optional: one float32 weight per edge, in CSC order (what weighted sampling walks)."""
ORDER_FILE = "order/ids"
"""Optional: the user's id of each stored node, when the nodes were stored in another order
(``remotegnn reorder``); every other file then speaks of stored positions."""


class FileEntry(StrictModel):
    """One ``.npy`` file of the dataset, as written."""

    path: str = Field(description="relative to the dataset directory")
    dtype: str
    shape: tuple[int, ...]
    bytes: int = Field(ge=0, description="size of the whole .npy file, header included")
    blake2b: str = Field(min_length=32, max_length=128, description="hex digest of the whole file")


class NodeType(StrictModel):
    """One node type of a heterogeneous graph: its nodes hold consecutive ids, in type order."""

    name: str = Field(min_length=1)
    count: int = Field(ge=0)
    feature_dim: int = Field(ge=0, description="its own feature columns (rows are padded to the widest type)")
    labelled: bool = Field(False, description="its nodes carry labels")
    splits: list[str] = Field(default_factory=list, description="the train/val/test masks it has")


class EdgeType(StrictModel):
    """One edge type (source type, relation, destination type); its edges hold consecutive ids."""

    src: str
    rel: str
    dst: str
    count: int = Field(ge=0)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.src, self.rel, self.dst)


class HeteroMeta(StrictModel):
    """Node and edge types of a heterogeneous graph, stored as one id space: type t's nodes are
    ids ``node_offsets[t]`` on, edge type r's edges ids ``edge_offsets[r]`` on, so a sampled
    node's or edge's type follows from its id alone."""

    node_types: list[NodeType] = Field(min_length=1)
    edge_types: list[EdgeType]

    @property
    def node_offsets(self) -> list[int]:
        return _offsets(t.count for t in self.node_types)

    @property
    def edge_offsets(self) -> list[int]:
        return _offsets(t.count for t in self.edge_types)

    def node_type(self, name: str) -> int:
        names = [t.name for t in self.node_types]
        if name not in names:
            raise ValueError(f"node type {name!r}: the graph's node types are {', '.join(names)}")
        return names.index(name)


def _offsets(counts) -> list[int]:
    out = [0]
    for count in counts:
        out.append(out[-1] + count)
    return out


class DatasetMeta(StrictModel):
    """Schema ``remotegnn.dataset`` v1."""

    kind: Literal["remotegnn.dataset"] = DATASET_KIND
    version: Literal[1] = DATASET_VERSION
    name: str = Field(min_length=1, max_length=200)
    num_nodes: int = Field(gt=0)
    num_edges: int = Field(ge=0, description="stored directed edges")
    feature_dim: int = Field(gt=0)
    feature_dtype: FeatureDtype
    num_classes: int = Field(ge=0, description="0 when the graph has no labels")
    index_dtype: IndexDtype = Field(description="dtype of node ids in indices, and of edge ids")
    undirected: bool = Field(description="every edge is stored in both directions")
    source: str = Field("", max_length=2000, description="where the graph came from, and how it was converted")
    edge_weight: str | None = Field(
        None, description="the edge attribute stored as sampling weights (PyG's weight_attr), if any"
    )
    hetero: HeteroMeta | None = Field(None, description="node and edge types, for a heterogeneous graph")
    node_order: str | None = Field(
        None, description="the locality order the nodes are stored in (their own ids are in order/ids), if any"
    )
    files: dict[str, FileEntry]

    @model_validator(mode="after")
    def _files_complete(self) -> DatasetMeta:
        missing = [name for name in GRAPH_FILES + NODE_FILES if name not in self.files]
        if missing:
            raise ValueError(f"files: missing entries {', '.join(missing)}")
        optional = {f"splits/{s}" for s in SPLITS} | {WEIGHT_FILE, ORDER_FILE}
        unknown = set(self.files) - set(GRAPH_FILES + NODE_FILES) - optional
        if unknown:
            raise ValueError(f"files: unknown entries {', '.join(sorted(unknown))}")
        if (self.edge_weight is None) != (WEIGHT_FILE not in self.files):
            raise ValueError(f"edge_weight: named without a {WEIGHT_FILE} file, or the file without a name")
        if (self.node_order is None) != (ORDER_FILE not in self.files):
            raise ValueError(f"node_order: named without an {ORDER_FILE} file, or the file without a name")
        hetero = self.hetero
        if hetero is not None and (hetero.node_offsets[-1], hetero.edge_offsets[-1]) != (
            self.num_nodes,
            self.num_edges,
        ):
            raise ValueError("hetero: the types' node and edge counts do not add up to the graph's")
        return self

    @property
    def splits(self) -> list[str]:
        return [s for s in SPLITS if f"splits/{s}" in self.files]

    @property
    def row_bytes(self) -> int:
        return self.feature_dim * DTYPE_BYTES[self.feature_dtype]


def index_dtype_for(num_nodes: int, num_edges: int) -> IndexDtype:
    """int32 where node and edge ids fit (half the RAM of int64), else int64."""
    return "int32" if max(num_nodes, num_edges) < 2**31 else "int64"
