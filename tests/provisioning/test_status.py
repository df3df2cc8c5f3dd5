"""`status`: live resources from EC2 by tags, cost so far at the prices recorded at launch."""

from __future__ import annotations

import datetime as dt

import pytest

from provisioning import bringup, tags, teardown
from provisioning.errors import ClusterConflictError
from provisioning.status import status


def test_cost_so_far_uses_the_launch_prices_in_the_tags(aws, moto, two_level_plan, make_options):
    result = bringup.up(aws, two_level_plan, make_options())
    learner = result.state.nodes[0]
    # the price in the tag is what counts, not today's catalog: pretend it was 9.99 at launch
    moto.ec2.create_tags(Resources=[learner.instance_id], Tags=[{"Key": tags.PRICE, "Value": "9.990000"}])
    launched = moto.ec2.describe_instances(InstanceIds=[learner.instance_id])["Reservations"][0]["Instances"][0][
        "LaunchTime"
    ]
    report = status(aws, "c1", now=launched + dt.timedelta(hours=2))
    rows = {r.id: r for r in report.resources}
    assert rows[learner.instance_id].cost_usd == pytest.approx(9.99 * 2)
    instances = [r for r in report.resources if r.kind == "instance"]
    volumes = [r for r in report.resources if r.kind == "volume" and r.role == "data-volume"]
    assert len(instances) == 3 and len(volumes) == 2
    for row in instances + volumes:
        hours = (launched + dt.timedelta(hours=2) - row.since).total_seconds() / 3600
        assert row.cost_usd == pytest.approx(row.usd_per_hour * hours, abs=1e-4)
    assert report.cost_so_far_usd == pytest.approx(sum(r.cost_usd for r in report.resources), abs=1e-3)
    plan = two_level_plan.chosen
    assert report.usd_per_hour == pytest.approx(
        9.99 + 2 * plan.memory.usd_per_hour_each + 2 * plan.volume.usd_per_hour_each
    )
    assert report.plan_id == two_level_plan.plan_id and report.exists and report.drift == []
    assert {r.kind for r in report.resources} == {"instance", "volume", "security-group", "placement-group", "key-pair"}
    teardown.down(aws, "c1")


def test_stopped_instances_bill_no_compute_and_block_up(aws, moto, two_level_plan, make_options):
    result = bringup.up(aws, two_level_plan, make_options())
    stopped = result.state.nodes[1].instance_id
    moto.ec2.stop_instances(InstanceIds=[stopped])
    report = status(aws, "c1", now=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
    row = next(r for r in report.resources if r.id == stopped)
    assert row.state in ("stopping", "stopped") and row.cost_usd == 0.0
    with pytest.raises(ClusterConflictError, match="stopped instances"):
        bringup.up(aws, two_level_plan, make_options())
    teardown.down(aws, "c1")


def test_drift_between_the_state_file_and_ec2(aws, moto, two_level_plan, make_options):
    result = bringup.up(aws, two_level_plan, make_options())
    gone = result.state.nodes[2]
    moto.ec2.terminate_instances(InstanceIds=[gone.instance_id])
    report = status(aws, "c1", result.state, result.state_file)
    assert report.drift == [f"memory-1 ({gone.instance_id}) is in the state file but not live in EC2"]
    teardown.down(aws, "c1")


def test_a_cluster_that_does_not_exist(aws):
    report = status(aws, "nothing-here")
    assert (report.exists, report.resources, report.cost_so_far_usd, report.usd_per_hour) == (False, [], 0.0, 0.0)
