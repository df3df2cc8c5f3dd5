"""What putting a dataset on a machine did (``FetchResult``): `remotegnn fetch --json` prints it on the
machine, and `provision run`, which runs that command there over ssh, reads it."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from contracts.shards import ShardLayoutName
from foundation.models import StrictModel

FETCH_KIND: Final = "memorybridge.fetch"


class FetchResult(StrictModel):
    """A dataset copied from S3 and verified, or found already there and intact (schema v1)."""

    kind: Literal["memorybridge.fetch"] = FETCH_KIND
    version: Literal[1] = 1
    source: str = Field(description="s3://BUCKET/PREFIX the dataset came from")
    destination: str = Field(description="the dataset directory on this machine")
    copied: bool = Field(description="false: an intact copy was already there, nothing was copied")
    files: int = Field(ge=0)
    bytes: int = Field(
        ge=0,
        description="what the copy holds on this machine: every file, or for a part the structure files, the "
        "features' .npy header and its rows",
    )
    shard: int | None = Field(
        None, ge=0, description="the memory machine whose rows the copy holds (`remotegnn fetch --shard`); null: all"
    )
    shards: int | None = Field(None, ge=1, description="memory machines the rows are dealt to, for a part")
    layout: ShardLayoutName | None = Field(None, description="how the rows are dealt (contracts.shards), for a part")
    structure_only: bool = Field(False, description="the copy holds the structure and none of the rows")
    dataset_bytes: int | None = Field(None, ge=0, description="the whole dataset's size, every file")
    fetched_bytes: int = Field(
        0,
        ge=0,
        description="read from S3 by this fetch (0: nothing copied); a part's runs close together are read in one "
        "request, the bytes between them dropped",
    )

    @property
    def part(self) -> str | None:
        """Which part the copy is, in words; None for a whole copy."""
        if self.structure_only:
            return "the structure alone"
        if self.shard is not None:
            return f"part {self.shard} of {self.shards}, {self.layout}"
        return None

    def sentence(self) -> str:
        what = f" ({self.part})" if self.part else ""
        if not self.copied:
            return f"{self.destination}{what} is already there and verified"
        said = (
            f"{self.destination}{what}: {self.files} files, {self.bytes:,} bytes copied from {self.source} and verified"
        )
        if self.fetched_bytes and self.fetched_bytes != self.bytes:
            said += f"; {self.fetched_bytes:,} bytes read from S3"
        return said
