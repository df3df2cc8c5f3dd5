"""How work splits across ranks: memory ranks shard feature rows and take turns sampling batches;
learner ranks take disjoint slices of each epoch's seeds.

Rows are dealt to memory ranks in blocks of ``block_rows`` consecutive rows, block b to rank
``b % count`` (``contracts.shards``: striped blocks by default, so each rank reads only its own
runs of the feature file and hot rows still spread over every rank). Batch b is sampled by
rank ``b % count``, which forwards the sampled structure to the others; every rank then sends
the learner its own rows of every batch. This is the split the planner's pipeline model
assumes: caches add up across memory machines, each samples 1/k of the batches, each keeps the
whole structure. When the learner samples its own batches (``learner_samples``), no memory rank
owns a batch: each is sent every batch's ids of its rows instead, by the learner.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from contracts.shards import ShardLayout, owners
from foundation.models import StrictModel
from remotegnn.errors import DatasetError
from remotegnn.store import GraphDataset


class Shard(StrictModel):
    """Part ``index`` of ``count``."""

    index: int = Field(0, ge=0)
    count: int = Field(1, ge=1)
    block_rows: int = Field(1, ge=1, description="consecutive rows dealt to a rank at a time (1: row v on v % count)")
    learner_samples: bool = Field(
        False, description="the learner samples every batch and sends each rank the ids of its rows (no rank owns one)"
    )

    @model_validator(mode="after")
    def _in_range(self) -> Shard:
        if self.index >= self.count:
            raise ValueError(f"shard index {self.index} must be below the shard count {self.count}")
        return self

    @property
    def whole(self) -> bool:
        return self.count == 1

    def owner(self, batch: int) -> int:
        """The memory rank that samples ``batch``."""
        return batch % self.count

    def owns_batch(self, batch: int) -> bool:
        """Whether this rank samples ``batch`` (and sends its structure and labels)."""
        return not self.learner_samples and self.owner(batch) == self.index

    def own_nodes(self, nodes: np.ndarray) -> np.ndarray:
        """The nodes of ``nodes`` (e.g. a cache ranking) this shard holds, order kept."""
        return nodes if self.whole else nodes[owners(nodes, self.block_rows, self.count) == self.index]


def check_staged(dataset: GraphDataset, layout: ShardLayout, index: int) -> None:
    """Refuse to serve as rank ``index`` of ``layout`` from a copy staged for anything else: a
    part's other rows are holes that read as zeros, so serving them would be silently wrong."""
    staged = dataset.shard_manifest()
    if staged is None:
        return  # a whole copy serves every layout
    if staged.structure_only:
        raise DatasetError(
            f"{dataset.path} holds the structure alone (a sampling learner's copy), no feature rows: "
            "stage this memory machine its part (remotegnn fetch --shard) or the whole dataset"
        )
    if staged.index != index or staged.layout != layout:
        raise DatasetError(
            f"{dataset.path} holds part {staged.index} of {staged.layout.count} ({staged.layout.layout}), "
            f"but this rank serves part {index} of {layout.count} ({layout.layout}): launch with the "
            "layout and memory machines it was staged for, or fetch this machine's part again"
        )
