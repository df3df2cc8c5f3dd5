"""Failover order and error classes: which plans to try, in which zones, and what moves on where.

Plans: the plan file's chosen plan (rank 0), then its ranked alternatives that also meet the
budget, deadline and hourly cap (``fits``), in the planner's order; failover never silently buys a
plan the user's constraints rule out. Zones: those of the region whose default subnet exists and
that offer every instance type of the plan (``describe_instance_type_offerings``), in name order.
All machines of a cluster share one zone (and one cluster placement group), so a capacity error
for any node moves the whole cluster to the next zone; an error no other zone can fix (a quota, a
type the region lacks, no image) moves on to the next plan.
"""

from __future__ import annotations

from typing import Literal

from contracts.plan import ClusterPlan, Recommendation
from planner.errors import InfeasibleError
from provisioning.aws import Aws
from provisioning.errors import AwsError, PlanUnavailableError

ZONE_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientHostCapacity",
        "InsufficientCapacity",
        "Unsupported",
        "InsufficientVolumeCapacity",
        "InsufficientFreeAddressesInSubnet",
        "SpotMaxPriceTooLow",
    }
)
PLAN_CODES = frozenset({"VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotInstanceCountExceeded"})


def classify(exc: BaseException) -> Literal["zone", "plan"] | None:
    """'zone': try the next zone; 'plan': try the next plan; None: not a failover error (roll back)."""
    if isinstance(exc, PlanUnavailableError):
        return "plan"
    if isinstance(exc, AwsError):
        if exc.code in ZONE_CODES:
            return "zone"
        if exc.code in PLAN_CODES or exc.code.startswith("InvalidInstanceType"):
            return "plan"
    return None


def candidates(rec: Recommendation) -> list[tuple[int, ClusterPlan]]:
    """(rank, plan) in failover order: rank 0 is the chosen plan, rank n its n-th alternative."""
    if rec.chosen is None:
        raise InfeasibleError(f"the plan file {rec.plan_id} has no chosen plan: {rec.reason or 'nothing fits'}")
    return [(0, rec.chosen)] + [(i + 1, plan) for i, plan in enumerate(rec.alternatives) if plan.fits]


def zones_offering(aws: Aws, types: list[str], subnets: dict[str, str]) -> list[str]:
    """Zones with a default subnet that offer every type in ``types``, in name order."""
    offers = aws.items(
        "describe_instance_type_offerings",
        "InstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": sorted(set(types))}],
    )
    zones = set(subnets)
    for name in set(types):
        zones &= {o["Location"] for o in offers if o["InstanceType"] == name}
    return sorted(zones)
