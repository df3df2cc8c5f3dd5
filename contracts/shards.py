"""Which feature rows each memory machine serves: the shard layout, shared by the data layer (which
serves and stages by it) and the planner (which prices each machine's reads and copies by it).

Rows are dealt to the k memory machines in blocks of ``block_rows`` consecutive rows, block b to
machine ``b % k``. One rule covers the three layouts:

- ``striped`` (the default): blocks of about ``STRIPE_BYTES`` of the feature file. A machine's
  rows are a few hundred long runs of the file, so filling its caches and reading its misses read
  its own part of the file and no other (a read-ahead window rarely crosses a block's edge), while
  blocks dealt in turn spread hot rows over every machine even when the ids cluster hot rows
  together (R-MAT ids, or a graph reordered by degree).
- ``range``: one block per machine, ids ``[i*n/k, (i+1)*n/k)``. Contiguous too, but a graph whose
  hot rows share an id range piles them onto one machine.
- ``modulo``: row v on machine ``v % k`` (blocks of one row). Balanced, but every machine's rows
  are spread over the whole file, so each reads nearly all of it to fill a cache.
"""

from __future__ import annotations

from typing import Final, Literal

import numpy as np
from pydantic import Field, model_validator

from foundation.models import StrictModel

ShardLayoutName = Literal["striped", "range", "modulo"]
SHARD_LAYOUTS: Final[tuple[str, ...]] = ("striped", "range", "modulo")
DEFAULT_LAYOUT: Final = "striped"
READAHEAD_BYTES: Final = 128 << 10
"""What one read of a memory-mapped file brings in from a cloud volume (Linux's default read-ahead,
read_ahead_kb 128, which a new EBS volume shows): a cache fill reads whole windows of this many
bytes, not just the rows it keeps. The planner prices windows of it; the testbed's volumes use it."""
STRIPE_BYTES: Final = 64 * 2**20
"""A striped block's size in the feature file: 512 read-ahead windows of 128 KiB, so a window that
overhangs a block's edge reads at most 0.2% more than the machine's own rows."""
MIN_STRIPES_PER_SHARD: Final = 64
"""Small graphs get smaller blocks, so each machine still holds at least this many and hot rows
spread over all of them."""
SHARDS_KIND: Final = "memorybridge.shards"


def owners(nodes: np.ndarray, block_rows: int, count: int) -> np.ndarray:
    """The machine of each of ``nodes`` when ``block_rows`` rows at a time are dealt to ``count``
    machines in turn: the one rule every side applies (the vector loaders' numba kernel repeats it
    inline, ``remotegnn.cache.kernels.select_sent``)."""
    return (nodes // block_rows) % count


class ShardLayout(StrictModel):
    """How ``num_nodes`` rows are dealt to ``count`` memory machines (see the module docstring)."""

    layout: ShardLayoutName = DEFAULT_LAYOUT
    count: int = Field(1, ge=1, description="memory machines")
    num_nodes: int = Field(0, ge=0)
    block_rows: int = Field(1, ge=1, description="consecutive rows dealt to one machine at a time")

    @classmethod
    def of(cls, layout: ShardLayoutName, count: int, num_nodes: int, row_bytes: int) -> ShardLayout:
        """The layout for a feature file of ``num_nodes`` rows of ``row_bytes``."""
        if layout == "modulo" or count == 1:
            block = 1
        elif layout == "range":
            block = max(1, -(-num_nodes // count))
        else:
            fair = -(-num_nodes // (count * MIN_STRIPES_PER_SHARD))
            block = max(1, min(STRIPE_BYTES // max(1, row_bytes), fair))
        return cls(layout=layout, count=count, num_nodes=num_nodes, block_rows=block)

    def owner(self, nodes: np.ndarray) -> np.ndarray:
        """The machine that serves each of ``nodes``."""
        return owners(nodes, self.block_rows, self.count)

    def ranges(self, index: int) -> np.ndarray:
        """Machine ``index``'s rows as ``[start, stop)`` pairs in file order (int64, shape [r, 2])."""
        starts = np.arange(index * self.block_rows, self.num_nodes, self.count * self.block_rows, dtype=np.int64)
        return np.stack([starts, np.minimum(starts + self.block_rows, self.num_nodes)], axis=1)

    def rows(self, index: int) -> int:
        """How many rows machine ``index`` serves."""
        pairs = self.ranges(index)
        return int((pairs[:, 1] - pairs[:, 0]).sum())


class ShardEntry(StrictModel):
    """One memory machine's part."""

    index: int = Field(ge=0)
    rows: int = Field(ge=0)
    runs: int = Field(ge=0, description="contiguous runs of the feature file it holds")
    feature_bytes: int = Field(ge=0, description="bytes of the feature file it holds")


class ShardManifest(StrictModel):
    """Schema ``memorybridge.shards`` v1: which rows each memory machine serves, what `remotegnn
    shards` prints and what a staged copy records (``shard.json``: ``index`` set for a machine's part,
    ``structure_only`` for the structure alone; ``features_blake2b`` either way)."""

    kind: Literal["memorybridge.shards"] = SHARDS_KIND
    version: Literal[1] = 1
    layout: ShardLayout
    row_bytes: int = Field(gt=0)
    structure_bytes: int = Field(ge=0, description="every file but the features: each machine holds all of it")
    shards: list[ShardEntry]
    index: int | None = Field(None, ge=0, description="in a staged part: the machine this copy is for")
    structure_only: bool = Field(
        False, description="a staged copy that holds none of the rows (a learner that samples): index is None"
    )
    features_blake2b: str | None = Field(
        None,
        min_length=32,
        max_length=128,
        description="in a staged copy: BLAKE2b (hex) of the feature file's bytes it holds, the .npy header and then "
        "its rows in file order (meta.json's digest covers the whole file, which a part never holds)",
    )

    @model_validator(mode="after")
    def _one_kind_of_copy(self) -> ShardManifest:
        if self.structure_only and self.index is not None:
            raise ValueError("structure_only: a copy of the structure alone is no machine's part (index must be null)")
        if self.index is not None and self.index >= self.layout.count:
            raise ValueError(f"index: {self.index} is not one of the {self.layout.count} machines")
        return self

    @property
    def staged(self) -> bool:
        """This copy's feature file holds only some rows (a part, or none): never serve it as whole."""
        return self.index is not None or self.structure_only

    @classmethod
    def of(cls, layout: ShardLayout, row_bytes: int, structure_bytes: int) -> ShardManifest:
        entries = []
        for i in range(layout.count):
            pairs = layout.ranges(i)
            rows = int((pairs[:, 1] - pairs[:, 0]).sum())
            entries.append(ShardEntry(index=i, rows=rows, runs=len(pairs), feature_bytes=rows * row_bytes))
        return cls(layout=layout, row_bytes=row_bytes, structure_bytes=structure_bytes, shards=entries)
