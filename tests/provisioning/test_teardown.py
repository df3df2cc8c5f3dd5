"""Deleting: dependency order, re-runnable, tags are enough, failures named."""

from __future__ import annotations

import pytest

from provisioning import bringup, tags, teardown
from provisioning.errors import CleanupError
from provisioning.inventory import ResourceIds, discover
from tests.provisioning.conftest import live_instances
from tests.provisioning.ec2fakes import ec2_error


def test_down_deletes_everything_and_is_safe_to_rerun(aws, moto, two_level_plan, make_options):
    bringup.up(aws, two_level_plan, make_options())
    deleted = teardown.down(aws, "c1")
    kinds = {label.split()[0] for label in deleted.labels()}
    assert kinds == {"instance", "volume", "security-group", "placement-group", "key-pair"}
    assert discover(aws, "c1").is_empty()
    assert teardown.down(aws, "c1").is_empty()


def test_a_volume_attached_to_an_instance_that_stays_is_detached_first(aws, moto, two_level_plan, make_options):
    result = bringup.up(aws, two_level_plan, make_options())
    learner = result.state.nodes[0]
    extra = moto.ec2.create_volume(
        AvailabilityZone=result.state.availability_zone,
        Size=1,
        VolumeType="gp3",
        TagSpecifications=[tags.tag_specification("volume", {tags.CLUSTER: "c1"})],
    )
    moto.ec2.attach_volume(VolumeId=extra["VolumeId"], InstanceId=learner.instance_id, Device="/dev/sdg")
    teardown.delete(aws, ResourceIds(volumes=[extra["VolumeId"]]))
    assert moto.ec2.describe_volumes(Filters=[{"Name": "volume-id", "Values": [extra["VolumeId"]]}])["Volumes"] == []
    assert learner.instance_id in {i["InstanceId"] for i in live_instances(moto)}
    teardown.down(aws, "c1")


def test_a_busy_security_group_is_retried(aws, moto, two_level_plan, make_options):
    bringup.up(aws, two_level_plan, make_options())
    busy = iter([True, True])
    moto.faults.on(
        "DeleteSecurityGroup",
        lambda p: (
            ec2_error("DependencyViolation", "resource has a dependent object", 400) if next(busy, False) else None
        ),
    )
    teardown.down(aws, "c1")
    assert moto.faults.calls["DeleteSecurityGroup"] == 3


def test_what_cannot_be_deleted_is_named_and_the_rest_goes(aws, moto, two_level_plan, make_options):
    result = bringup.up(aws, two_level_plan, make_options())
    moto.faults.on("DeleteSecurityGroup", lambda p: ec2_error("UnauthorizedOperation", "no", 403))
    with pytest.raises(CleanupError, match=f"security-group {result.state.security_group_id}.*run `provision down"):
        teardown.down(aws, "c1")
    left = discover(aws, "c1").ids()
    assert left.security_groups == [result.state.security_group_id] and left.labels() == [
        f"security-group {result.state.security_group_id}"
    ]
    moto.faults.clear()
    teardown.down(aws, "c1")
