"""`up` end to end against moto: what it creates, how it fails over, and that a failure leaves nothing."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from contracts.plan import Recommendation
from provisioning import bringup, tags, teardown
from provisioning.errors import AwsError, ClusterConflictError, NoCapacityError
from provisioning.statefile import read, wheel_dir
from provisioning.wheel import sha256_of
from tests.provisioning.conftest import live_instances
from tests.provisioning.ec2fakes import ec2_error

CAPACITY = "InsufficientInstanceCapacity"


def test_up_creates_the_plan_in_one_zone_with_tags_imdsv2_and_encrypted_gp3(aws, moto, two_level_plan, make_options):
    result = bringup.up(aws, two_level_plan, make_options())
    plan, state = two_level_plan.chosen, result.state
    instances = {tags.tags_of(i)[tags.NODE]: i for i in live_instances(moto)}
    assert sorted(instances) == ["learner-0", "memory-0", "memory-1"]
    assert instances["learner-0"]["InstanceType"] == plan.learner.instance_type
    assert {instances[n]["InstanceType"] for n in ("memory-0", "memory-1")} == {plan.memory.instance_type}
    assert {i["Placement"]["AvailabilityZone"] for i in instances.values()} == {state.availability_zone}
    assert moto.placement_groups.launches == [(state.placement_group, state.availability_zone)] * 3
    for node, instance in instances.items():
        assert instance["MetadataOptions"]["HttpTokens"] == "required"
        assert instance["KeyName"] == "memorybridge-c1"
        assert [g["GroupId"] for g in instance["SecurityGroups"]] == [state.security_group_id]
        t = tags.tags_of(instance)
        expected_price = plan.learner.usd_per_hour_each if node == "learner-0" else plan.memory.usd_per_hour_each
        assert (t[tags.CLUSTER], t[tags.PLAN_ID], t[tags.PLAN_RANK]) == ("c1", two_level_plan.plan_id, "0")
        assert t[tags.ROLE] == node.split("-")[0] and float(t[tags.PRICE]) == pytest.approx(expected_price)
        assert "InstanceLifecycle" not in instance  # on-demand, as the plan says

    volumes = moto.ec2.describe_volumes(Filters=[{"Name": f"tag:{tags.ROLE}", "Values": ["data-volume"]}])["Volumes"]
    assert len(volumes) == 2
    for volume in volumes:
        assert (volume["VolumeType"], volume["Encrypted"], volume["Size"], volume["Iops"], volume["Throughput"]) == (
            "gp3",
            True,
            plan.volume.size_gb,
            plan.volume.iops,
            plan.volume.throughput_mbps,
        )
        node = tags.tags_of(volume)[tags.NODE]
        assert volume["Attachments"][0]["InstanceId"] == instances[node]["InstanceId"]
        assert float(tags.tags_of(volume)[tags.PRICE]) == pytest.approx(plan.volume.usd_per_hour_each)
    assert "learner-0" not in {tags.tags_of(v)[tags.NODE] for v in volumes}  # two-level: data on memory machines

    # every resource carries the cluster, role, plan id and launch price
    ec2 = moto.ec2
    everything = ec2.describe_tags(Filters=[{"Name": "key", "Values": [tags.CLUSTER]}])["Tags"]
    for resource_id in {t["ResourceId"] for t in everything}:
        resource_tags = {
            t["Key"] for t in ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [resource_id]}])["Tags"]
        }
        assert {tags.CLUSTER, tags.ROLE, tags.PLAN_ID, tags.PRICE} <= resource_tags, resource_id
    assert set(moto.placement_groups.groups[state.placement_group]["tags"]) >= {
        tags.CLUSTER,
        tags.ROLE,
        tags.PLAN_ID,
        tags.PRICE,
    }

    assert read(moto.state_dir, "c1") == state
    assert state.usd_per_hour == plan.usd_per_hour and state.predicted_total_usd == plan.total_usd
    teardown.down(aws, "c1")


def test_every_machine_boots_the_shipped_wheel_by_sha256_and_nothing_of_its_name_from_an_index(
    aws, moto, two_level_plan, make_options, wheel_file
):
    result = bringup.up(aws, two_level_plan, make_options())
    wheel = result.state.wheel
    assert wheel is not None and wheel.file == wheel_file.name and wheel.sha256 == sha256_of(wheel_file)
    assert (wheel_dir(moto.state_dir, "c1") / wheel.file).read_bytes() == wheel_file.read_bytes()
    instances = live_instances(moto)
    assert len(instances) == 3
    for instance in instances:
        data = moto.ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
        script = base64.b64decode(data["UserData"]["Value"]).decode()
        assert wheel.file in script and f"= {wheel.sha256} ]" in script
        for line in script.splitlines():
            if "pip install" in line:
                words = line.split("pip install", 1)[1].split()
                assert not [w for w in words if w.strip("'").lower().startswith("memorybridge")], line
        role = tags.tags_of(instance)[tags.ROLE]
        assert ("torch==" in script) == (role == "learner")  # only the learner trains
        assert "numpy==" in script and "mpi4py==" in script
        assert tags.tags_of(instance)[tags.VERSION] == wheel.version == "0.1.0"
    teardown.down(aws, "c1")
    assert not live_instances(moto)


def test_up_twice_with_one_name_converges_to_one_cluster(aws, moto, two_level_plan, make_options):
    first = bringup.up(aws, two_level_plan, make_options())
    second = bringup.up(aws, two_level_plan, make_options())
    assert second.created == []
    assert [n.instance_id for n in second.state.nodes] == [n.instance_id for n in first.state.nodes]
    assert len(live_instances(moto)) == 3
    assert (
        len(
            moto.ec2.describe_security_groups(Filters=[{"Name": f"tag:{tags.CLUSTER}", "Values": ["c1"]}])[
                "SecurityGroups"
            ]
        )
        == 1
    )
    teardown.down(aws, "c1")


def test_up_completes_a_partial_cluster_in_its_zone(aws, moto, two_level_plan, make_options):
    """A node lost since the last up (a reclaimed spot machine, a crash mid-run) is replaced; the rest is kept."""
    first = bringup.up(aws, two_level_plan, make_options())
    lost = first.state.nodes[2]
    moto.ec2.terminate_instances(InstanceIds=[lost.instance_id])
    second = bringup.up(aws, two_level_plan, make_options())
    assert [label.split()[0] for label in second.created] == ["instance"]
    assert second.state.availability_zone == first.state.availability_zone
    replaced = second.state.nodes[2]
    assert replaced.instance_id != lost.instance_id and replaced.volume_id == lost.volume_id  # data volume reattached
    assert [n.instance_id for n in second.state.nodes[:2]] == [n.instance_id for n in first.state.nodes[:2]]
    teardown.down(aws, "c1")


def test_up_refuses_a_name_that_runs_another_plan(aws, moto, two_level_plan, make_options):
    bringup.up(aws, two_level_plan, make_options())
    other = two_level_plan.model_copy(update={"plan_id": "0123456789abcdef"})
    with pytest.raises(ClusterConflictError, match="already runs plan"):
        bringup.up(aws, other, make_options())
    assert len(live_instances(moto)) == 3
    teardown.down(aws, "c1")


def test_capacity_error_in_one_zone_moves_the_whole_cluster_to_the_next(aws, moto, two_level_plan, make_options):
    memory_type = two_level_plan.chosen.memory.instance_type
    moto.faults.on(
        "RunInstances",
        lambda p: (
            ec2_error(CAPACITY)
            if (p["Placement.AvailabilityZone"] == "us-east-1a" and p["InstanceType"] == memory_type)
            else None
        ),
    )
    result = bringup.up(aws, two_level_plan, make_options())
    assert [(a.zone, a.outcome) for a in result.attempts] == [("us-east-1a", "capacity"), ("us-east-1b", "launched")]
    assert {i["Placement"]["AvailabilityZone"] for i in live_instances(moto)} == {"us-east-1b"}
    assert len(live_instances(moto)) == 3  # the learner launched in us-east-1a was rolled back
    assert list(moto.placement_groups.groups) == ["memorybridge-c1-us-east-1b"]
    teardown.down(aws, "c1")


def test_capacity_error_in_every_zone_moves_to_the_next_plan(aws, moto, two_level_plan, make_options):
    memory_type = two_level_plan.chosen.memory.instance_type
    moto.faults.on("RunInstances", lambda p: ec2_error(CAPACITY) if p["InstanceType"] == memory_type else None)
    result = bringup.up(aws, two_level_plan, make_options())
    first = two_level_plan.alternatives[0]
    assert first.memory.instance_type != memory_type
    zones = [a.zone for a in result.attempts if a.rank == 0]
    assert len(zones) >= 2 and all(a.outcome == "capacity" for a in result.attempts if a.rank == 0)
    assert (result.attempts[-1].rank, result.attempts[-1].outcome) == (1, "launched")
    assert result.state.plan_rank == 1 and result.state.plan_label == first.label
    assert len(live_instances(moto)) == 1 + first.memory.count
    teardown.down(aws, "c1")


def test_when_nothing_launches_anywhere_up_fails_and_leaves_nothing(aws, moto, two_level_plan, make_options):
    moto.faults.on("RunInstances", lambda p: ec2_error(CAPACITY))
    only_two = two_level_plan.model_copy(update={"alternatives": two_level_plan.alternatives[:1]})
    with pytest.raises(NoCapacityError, match="plan 1"):
        bringup.up(aws, only_two, make_options())
    assert moto.faults.calls["RunInstances"] >= 4  # every offering zone, both plans


def test_quota_error_skips_the_remaining_zones_of_a_plan(aws, moto, two_level_plan, make_options):
    learner_type = two_level_plan.chosen.learner.instance_type
    moto.faults.on(
        "RunInstances",
        lambda p: ec2_error("VcpuLimitExceeded", status=400) if (p["InstanceType"] == learner_type) else None,
    )
    only_two = two_level_plan.model_copy(update={"alternatives": two_level_plan.alternatives[:1]})
    with pytest.raises(NoCapacityError):
        bringup.up(aws, only_two, make_options())
    assert moto.faults.calls["RunInstances"] == 2  # one zone per plan: a quota is the same in every zone


def test_an_error_after_some_resources_exist_rolls_everything_back(aws, moto, two_level_plan, make_options):
    moto.faults.on("AttachVolume", lambda p: ec2_error("UnauthorizedOperation", "not allowed to attach", 403))
    with pytest.raises(AwsError, match="UnauthorizedOperation"):
        bringup.up(aws, two_level_plan, make_options())
    assert live_instances(moto) == []
    assert moto.placement_groups.groups == {}
    assert read(moto.state_dir, "c1") is None


def test_a_create_whose_response_was_lost_is_still_rolled_back(aws, moto, two_level_plan, make_options):
    """The instance exists in EC2 but up never saw its id: the attempt tag finds it."""
    memory_type = two_level_plan.chosen.memory.instance_type
    moto.faults.on(
        "RunInstances",
        lambda p: ec2_error("UnauthorizedOperation", status=403) if (p["InstanceType"] == memory_type) else None,
        after_forward=True,
    )
    with pytest.raises(AwsError):
        bringup.up(aws, two_level_plan, make_options(cluster="lost"))
    reservations = moto.ec2.describe_instances(
        Filters=[
            {"Name": f"tag:{tags.CLUSTER}", "Values": ["lost"]},
            {"Name": "instance-type", "Values": [memory_type]},
        ]
    )
    lost = [i for r in reservations["Reservations"] for i in r["Instances"]]
    assert lost and {i["State"]["Name"] for i in lost} == {"terminated"}


def test_ctrl_c_during_up_rolls_back(aws, moto, two_level_plan, make_options):
    def interrupt(_):
        raise KeyboardInterrupt

    moto.faults.on("CreateVolume", interrupt)
    with pytest.raises(KeyboardInterrupt):
        bringup.up(aws, two_level_plan, make_options())
    assert live_instances(moto) == []


def test_an_instance_stopped_at_launch_fails_up_with_ec2s_reason(aws, moto, two_level_plan, make_options):
    """On AWS a volume's KMS key EC2 may not use ends so (Client.InternalError); moto can only terminate."""

    terminated: list[str] = []

    def terminate_the_first_waited_for(p):
        if "InstanceId.1" in p and not terminated:
            terminated.append(p["InstanceId.1"])
            moto.ec2.terminate_instances(InstanceIds=terminated)

    moto.faults.on("DescribeInstances", terminate_the_first_waited_for)
    with pytest.raises(AwsError, match="Client.UserInitiatedShutdown.*stopped at launch"):
        bringup.up(aws, two_level_plan, make_options())
    assert live_instances(moto) == []


def test_a_failed_second_up_keeps_the_first_cluster(aws, moto, two_level_plan, make_options):
    first = bringup.up(aws, two_level_plan, make_options())
    moto.ec2.terminate_instances(InstanceIds=[first.state.nodes[1].instance_id])
    moto.faults.on("RunInstances", lambda p: ec2_error(CAPACITY))
    with pytest.raises(NoCapacityError):
        bringup.up(aws, two_level_plan, make_options())
    assert {i["InstanceId"] for i in live_instances(moto)} == {
        first.state.nodes[0].instance_id,
        first.state.nodes[2].instance_id,
    }
    teardown.down(aws, "c1")


def test_throttled_launch_is_retried_with_backoff(aws, moto, two_level_plan, make_options):
    throttles = iter([True, True, True])
    moto.faults.on(
        "RunInstances",
        lambda p: ec2_error("RequestLimitExceeded", "Request limit exceeded.", 503) if next(throttles, False) else None,
    )
    retries = []
    aws.on_retry = lambda code, delay: retries.append(code)
    result = bringup.up(aws, two_level_plan, make_options())
    assert retries == ["RequestLimitExceeded"] * 3
    assert moto.faults.calls["RunInstances"] == 3 + 3 and len(live_instances(moto)) == 3
    assert [a.outcome for a in result.attempts] == ["launched"]
    teardown.down(aws, "c1")


def test_endless_throttling_fails_and_rolls_back(aws, moto, two_level_plan, make_options):
    moto.faults.on("CreateVolume", lambda p: ec2_error("RequestLimitExceeded", "Request limit exceeded.", 503))
    with pytest.raises(AwsError, match="RequestLimitExceeded"):
        bringup.up(aws, two_level_plan, make_options())
    assert moto.faults.calls["CreateVolume"] == aws.timing.backoff.max_attempts


def test_spot_plans_launch_spot_instances(aws, moto, two_level_plan, make_options):
    chosen = two_level_plan.chosen
    spot = chosen.model_copy(
        update={
            "learner": chosen.learner.model_copy(update={"market": "spot"}),
            "memory": chosen.memory.model_copy(update={"market": "spot"}),
        }
    )
    result = bringup.up(aws, two_level_plan.model_copy(update={"chosen": spot}), make_options())
    assert {i.get("InstanceLifecycle") for i in live_instances(moto)} == {"spot"}
    assert {n.market for n in result.state.nodes} == {"spot"}
    teardown.down(aws, "c1")


def test_single_machine_plan_puts_the_volume_on_the_learner(aws, moto, two_level_plan, make_options):
    single = two_level_plan.single_machine
    rec = two_level_plan.model_copy(update={"chosen": single, "alternatives": []})
    result = bringup.up(aws, rec, make_options())
    (learner,) = result.state.nodes
    assert learner.volume_id is not None and learner.role == "learner"
    teardown.down(aws, "c1")


def test_dry_run_creates_nothing_and_shows_the_failover_order(aws, moto, two_level_plan, make_options, memory_ami):
    opts = make_options()
    report = bringup.dry_run(aws, two_level_plan, opts, opts.public_key_file)
    assert (
        moto.ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["memorybridge-c1"]}])[
            "SecurityGroups"
        ]
        == []
    )
    assert live_instances(moto) == [] and moto.placement_groups.groups == {}
    assert moto.ec2.describe_key_pairs()["KeyPairs"] == []
    assert [o.rank for o in report.options] == [0] + [
        i + 1 for i, p in enumerate(two_level_plan.alternatives) if p.fits
    ]
    first = report.options[0]
    assert first.zones[0] == "us-east-1a" and len(first.zones) >= 2
    assert [n.node for n in first.nodes] == ["learner-0", "memory-0", "memory-1"]
    arm = next(o for o in report.options if o.nodes[1].arch == "arm64")
    assert arm.nodes[1].ami == memory_ami["arm64"] and arm.nodes[0].ami == memory_ami["x86_64"]
    group = next(r for r in report.creates.resources if r.kind == "security-group")
    assert (
        group.detail == "in the default VPC; all TCP from members of memorybridge-c1; SSH (22/tcp) from 203.0.113.7/32"
    )


def test_up_without_a_wheel_is_refused_before_anything_is_made(aws, moto, two_level_plan, make_options):
    from foundation.errors import UsageError

    with pytest.raises(UsageError, match="no wheel to install"):
        bringup.up(aws, two_level_plan, make_options(wheel=None))
    assert not live_instances(moto)
    assert not moto.ec2.describe_security_groups(Filters=[{"Name": f"tag:{tags.CLUSTER}", "Values": ["c1"]}])[
        "SecurityGroups"
    ]


@pytest.fixture(scope="module")
def ena_express_plan() -> Recommendation:
    """A real plan priced with ENA Express: p5.48xlarge and one r6in (both support it), learner cache off."""
    from contracts.plan import Filters, PlanRequest
    from planner.solver.recommend import recommend

    rec = recommend(
        PlanRequest(
            dataset="papers100M",
            workload={"learner_cache": "none"},
            filters=Filters(gpu_families=["p5"], memory_families=["r6in"], max_memory_nodes=1),
            ena_express=True,
        )
    )
    two_level = rec.two_level
    assert two_level is not None and two_level.data_path and two_level.data_path.ena_express
    return rec.model_copy(update={"chosen": two_level, "alternatives": []})


def test_a_plan_priced_with_ena_express_gets_it_on_every_machine(aws, moto, ena_express_plan, make_options):
    asked: list[dict[str, str]] = []
    moto.faults.on("ModifyNetworkInterfaceAttribute", lambda p: asked.append(p))  # recorded, then on to moto
    bringup.up(aws, ena_express_plan, make_options())
    instances = live_instances(moto)
    assert len(instances) == 2
    interfaces = [n for i in instances for n in i["NetworkInterfaces"]]
    primary = {n["NetworkInterfaceId"] for n in interfaces if n["Attachment"]["DeviceIndex"] == 0}
    assert {p["NetworkInterfaceId"] for p in asked} == primary and len(asked) == 2
    for p in asked:
        assert p["EnaSrdSpecification.EnaSrdEnabled"] == "true"
        assert p["EnaSrdSpecification.EnaSrdUdpSpecification.EnaSrdUdpEnabled"] == "false"
    for instance in instances:
        data = moto.ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
        assert "mtu 8900" in base64.b64decode(data["UserData"]["Value"]).decode()
    teardown.down(aws, "c1")


def test_ena_express_on_a_type_without_it_makes_the_plan_unavailable(aws, moto, two_level_plan, make_options):
    chosen = two_level_plan.chosen  # g4dn and r6in.2xlarge: neither supports ENA Express
    assert chosen.data_path is not None
    wrong = chosen.model_copy(update={"data_path": chosen.data_path.model_copy(update={"ena_express": True})})
    asked: list[dict[str, str]] = []
    moto.faults.on("ModifyNetworkInterfaceAttribute", lambda p: asked.append(p))
    result = bringup.up(aws, two_level_plan.model_copy(update={"chosen": wrong}), make_options())
    first = result.attempts[0]
    assert first.rank == 0 and first.outcome == "unavailable" and "does not support" in first.detail
    assert result.state.plan_rank > 0 and asked == []  # the next plan, which does not run it
    teardown.down(aws, "c1")


def test_a_plan_of_two_learner_machines_launches_both_and_lists_them_last_in_the_hostfile(
    aws, moto, two_level_plan, make_options
):
    """Learner machines learn side by side: learner-0 and learner-1, each with its ranks as MPI slots,
    after the memory machines (the rank order of `remotegnn launch`); no data volume on either."""
    chosen = two_level_plan.chosen
    two = chosen.model_copy(update={"learner": chosen.learner.model_copy(update={"count": 2})})
    state = bringup.up(aws, two_level_plan.model_copy(update={"chosen": two}), make_options()).state
    learners = [n for n in state.nodes if n.role == "learner"]
    assert [n.node for n in learners] == ["learner-0", "learner-1"]
    assert all(n.volume_id is None and n.instance_type == chosen.learner.instance_type for n in learners)
    lines = [line for line in Path(state.hostfile).read_text().splitlines() if not line.startswith("#")]
    memory = [n for n in state.nodes if n.role == "memory"]
    assert lines == [f"{n.private_ip} slots={n.slots}" for n in [*memory, *learners]]
    assert len(live_instances(moto)) == 4
    teardown.down(aws, "c1")
