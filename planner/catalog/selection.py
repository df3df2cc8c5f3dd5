"""Which instance types of the catalog a listing shows, by the criteria a user gives.

`planner instances` and ``GET /v1/instances`` both list the catalog; they share these criteria
and this one filter so that the same question gets the same types from either, and a criterion
added to one reaches the other.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from contracts.plan import Arch
from foundation.errors import NotFoundError
from foundation.models import StrictModel
from planner.catalog.models import InstanceType
from planner.catalog.snapshot import Catalog

MAX_LISTED_MEMORY_GIB: Final = 1e6
"""About thirty times the RAM of the largest instance types (32 TiB): a bigger number is a typo."""
NAME_SHOWN: Final = 100  # an unknown family is quoted back at most this long


class InstanceFilter(StrictModel):
    """The criteria of a listing; each one left unset keeps every type."""

    gpu: bool | None = Field(None, description="true: only GPU types; false: only GPU-less types")
    families: list[str] | None = Field(None, description="only these families")
    min_memory_gib: float | None = Field(None, ge=0, le=MAX_LISTED_MEMORY_GIB, description="at least this much RAM")
    arch: Arch | None = Field(None, description="x86_64 or arm64")
    include_unpriced: bool = Field(False, description="also types without a price (never recommended)")


def select_instances(catalog: Catalog, criteria: InstanceFilter) -> list[InstanceType]:
    """The catalog's types that meet ``criteria``, in snapshot order.

    An unknown family is an error with close matches rather than an empty list, because an empty
    answer would read as "no such machines" when the name was only misspelt.
    """
    for name in criteria.families or []:
        if name not in catalog.families:
            raise NotFoundError("family", name[:NAME_SHOWN], catalog.families)
    families = set(criteria.families) if criteria.families else None
    return [
        i
        for i in catalog.snapshot.instances
        if (criteria.include_unpriced or i.price_provenance)
        and (criteria.gpu is None or i.has_gpu == criteria.gpu)
        and (families is None or i.family in families)
        and (criteria.min_memory_gib is None or i.memory_gib >= criteria.min_memory_gib)
        and (criteria.arch is None or i.arch == criteria.arch)
    ]
