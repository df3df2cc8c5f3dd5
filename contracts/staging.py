"""What putting a dataset on a machine did (``FetchResult``): `remotegnn fetch --json` prints it on the
machine, and `provision run`, which runs that command there over ssh, reads it."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

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
    bytes: int = Field(ge=0)

    def sentence(self) -> str:
        if not self.copied:
            return f"{self.destination} is already there and verified"
        return f"{self.destination}: {self.files} files, {self.bytes:,} bytes copied from {self.source} and verified"
