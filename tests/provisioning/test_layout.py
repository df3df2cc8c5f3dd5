"""From plan to machines: architecture and GPUs from EC2, images per architecture, volumes and slots."""

from __future__ import annotations

import pytest

from provisioning.amis import AmiResolver
from provisioning.errors import PlanUnavailableError
from provisioning.layout import instance_types, node_specs


def test_two_level_plan(aws, two_level_plan, memory_ami):
    plan = two_level_plan.chosen
    nodes = node_specs(aws, plan, AmiResolver(aws, {"learner": memory_ami["x86_64"]}))
    assert [(n.node, n.role, n.instance_type) for n in nodes] == [
        ("learner-0", "learner", plan.learner.instance_type),
        ("memory-0", "memory", plan.memory.instance_type),
        ("memory-1", "memory", plan.memory.instance_type),
    ]
    learner, memory = nodes[0], nodes[1]
    assert (learner.gpus, learner.slots, learner.volume) == (1, 1, None)  # g4dn.4xlarge: one T4
    assert (memory.gpus, memory.slots) == (0, 1)
    assert (memory.volume.size_gb, memory.volume.iops, memory.volume.throughput_mbps) == (
        plan.volume.size_gb,
        plan.volume.iops,
        plan.volume.throughput_mbps,
    )
    assert memory.usd_per_hour == plan.memory.usd_per_hour_each and memory.market == "on-demand"
    assert {n.root_volume.device_name for n in nodes} == {"/dev/xvda"} and {n.kms_key_id for n in nodes} == {None}


def test_arm64_memory_machines_get_the_arm64_image(aws, two_level_plan, memory_ami):
    plan = next(p for p in two_level_plan.alternatives if p.memory and p.memory.instance_type.startswith("m7g"))
    nodes = node_specs(aws, plan, AmiResolver(aws, {"learner": memory_ami["x86_64"]}))
    assert (nodes[0].arch, nodes[0].ami) == ("x86_64", memory_ami["x86_64"])
    assert {(n.arch, n.ami) for n in nodes[1:]} == {("arm64", memory_ami["arm64"])}


def test_multi_gpu_learner_gets_a_slot_per_gpu(aws):
    assert instance_types(aws, ["g5.12xlarge", "r6in.2xlarge"])["g5.12xlarge"].gpus == 4


def test_each_learner_machine_gets_as_many_slots_as_ranks_the_plan_trains_on_it(aws, two_level_plan, memory_ami):
    """Two 4-GPU learners priced with --gpus 2: two slots each, so Open MPI, which fills slots in
    file order, puts two learner ranks on each machine rather than all four on the first."""
    chosen = two_level_plan.chosen
    learner = chosen.learner.model_copy(update={"instance_type": "g5.12xlarge", "count": 2})
    plan = chosen.model_copy(update={"learner": learner, "learner_ranks": 4})
    nodes = node_specs(aws, plan, AmiResolver(aws, {"learner": memory_ami["x86_64"]}))
    assert [(n.node, n.gpus, n.slots) for n in nodes if n.role == "learner"] == [
        ("learner-0", 4, 2),
        ("learner-1", 4, 2),
    ]
    unpriced = node_specs(
        aws, plan.model_copy(update={"learner_ranks": None}), AmiResolver(aws, {"learner": memory_ami["x86_64"]})
    )
    assert {n.slots for n in unpriced if n.role == "learner"} == {4}  # no GPU priced: one slot per GPU


def test_a_lone_machine_has_a_slot_for_the_memory_rank_beside_its_learners(aws, two_level_plan, memory_ami):
    alone = two_level_plan.chosen.model_copy(update={"memory": None, "learner_ranks": 1})
    (node,) = node_specs(aws, alone, AmiResolver(aws, {"learner": memory_ami["x86_64"]}))
    assert (node.role, node.slots, node.volume is not None) == ("learner", 2, True)  # serve + one learner


def test_a_type_the_region_does_not_know_makes_the_plan_unavailable(aws, two_level_plan):
    chosen = two_level_plan.chosen
    bogus = chosen.model_copy(update={"memory": chosen.memory.model_copy(update={"instance_type": "r99.huge"})})
    with pytest.raises(PlanUnavailableError, match="does not offer"):
        node_specs(aws, bogus, AmiResolver(aws))
