"""Failover order (plans within the constraints, zones offering every type) and error classes."""

from __future__ import annotations

import pytest

from planner.errors import InfeasibleError
from provisioning.errors import AmiNotFoundError, AwsError
from provisioning.failover import candidates, classify, zones_offering
from provisioning.network import default_subnets


def test_candidates_are_the_chosen_plan_then_fitting_alternatives_with_their_file_rank(two_level_plan):
    alternatives = list(two_level_plan.alternatives)
    alternatives[0] = alternatives[0].model_copy(update={"fits": False})
    ranked = candidates(two_level_plan.model_copy(update={"alternatives": alternatives}))
    assert ranked[0] == (0, two_level_plan.chosen)
    assert [rank for rank, _ in ranked[1:]] == list(range(2, len(alternatives) + 1))


def test_a_plan_file_without_a_chosen_plan_cannot_be_provisioned(two_level_plan):
    with pytest.raises(InfeasibleError, match="no chosen plan"):
        candidates(two_level_plan.model_copy(update={"chosen": None, "reason": "budget too small"}))


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (AwsError("RunInstances", "InsufficientInstanceCapacity", ""), "zone"),
        (AwsError("RunInstances", "Unsupported", ""), "zone"),
        (AwsError("CreateVolume", "InsufficientVolumeCapacity", ""), "zone"),
        (AwsError("RunInstances", "VcpuLimitExceeded", ""), "plan"),
        (AwsError("RunInstances", "InvalidInstanceType", ""), "plan"),
        (AmiNotFoundError("no image"), "plan"),
        (AwsError("RunInstances", "UnauthorizedOperation", ""), None),
        (ValueError("a bug"), None),
    ],
)
def test_classify(error, kind):
    assert classify(error) == kind


def test_zones_are_those_offering_every_type_in_name_order(aws):
    _, subnets = default_subnets(aws)
    everywhere = zones_offering(aws, ["c4.large"], subnets)
    assert everywhere == sorted(subnets)
    g4dn = zones_offering(aws, ["g4dn.8xlarge", "c4.large"], subnets)
    assert "us-east-1e" not in g4dn and g4dn == sorted(g4dn) and len(g4dn) >= 2  # moto's copy of the real offerings
    assert zones_offering(aws, ["g4dn.8xlarge"], {z: s for z, s in subnets.items() if z != g4dn[0]}) == g4dn[1:]
