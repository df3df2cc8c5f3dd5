"""The partition manifest: how a graph was split over n workers, and what one exchange moves."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field

from contracts.kinds import formerly
from foundation.models import StrictModel

PARTITION_KIND: Final = "memorybridge.partition"
OLDER_PARTITION_KIND: Final = "remotegnn.partition"  # read as PARTITION_KIND (contracts.kinds)
PARTITION_VERSION: Final = 1
MAX_PARTS = 256

PartitionMethod = Literal["random", "metis"]


class PartQuality(StrictModel):
    """One part's size and what it exchanges."""

    part: int = Field(ge=0)
    inner_nodes: int = Field(ge=0, description="nodes this worker owns")
    halo_nodes: int = Field(ge=0, description="remote nodes it receives representations of (B for this worker)")
    shared_nodes: int = Field(ge=0, description="its inner nodes at least one other worker receives")
    edges: int = Field(ge=0, description="in-edges of its inner nodes")
    cut_edges: int = Field(ge=0, description="of those, edges whose source another worker owns")
    split_nodes: dict[str, int] = Field(default_factory=dict, description="inner nodes per split")


class PartitionMeta(StrictModel):
    """Schema ``memorybridge.partition`` v1: ``partition.json`` of a partition directory (what
    `fullgraph partition` writes, its trainers read and `planner recommend --partition` prices).
    A manifest written under the schema's former name, ``remotegnn.partition``, still loads."""

    kind: Annotated[Literal["memorybridge.partition"], formerly(OLDER_PARTITION_KIND, PARTITION_KIND)] = PARTITION_KIND
    version: Literal[1] = PARTITION_VERSION
    dataset: str = Field(description="name of the partitioned dataset")
    num_nodes: int = Field(gt=0)
    num_edges: int = Field(ge=0)
    feature_dim: int = Field(gt=0)
    feature_dtype: str
    num_classes: int = Field(ge=0)
    parts: int = Field(ge=1, le=MAX_PARTS)
    method: PartitionMethod
    seed: int = Field(ge=0)
    cut_edges: int = Field(ge=0, description="edges whose endpoints different workers own")
    boundary_rows: int = Field(ge=0, description="sum of halo nodes over parts: rows one exchange moves")
    quality: list[PartQuality]
    boundary_digests: list[str] = Field(description="blake2b of boundary-P.npz, by part")

    @property
    def cut_fraction(self) -> float:
        return self.cut_edges / self.num_edges if self.num_edges else 0.0
