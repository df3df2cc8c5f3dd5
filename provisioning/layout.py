"""From a plan to machines: one NodeSpec per instance, with its architecture, image, volumes and slots.

The plan names instance types and counts; EC2's ``describe_instance_types`` says each type's
architecture (which picks the image), GPU count (the learner's MPI slots) and whether it supports
ENA Express. A type the region does not know, or a plan priced with ENA Express on a type the
region says does not support it, makes the whole plan unavailable, and failover moves on. The image
gives the root volume's device and size; every volume of a node is encrypted with the same key.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.cluster import Arch, Role
from contracts.plan import ClusterPlan, NodeGroup
from foundation.errors import UsageError
from provisioning.amis import AmiResolver
from provisioning.aws import Aws
from provisioning.errors import AwsError, PlanUnavailableError
from provisioning.models import DataVolume, NodeSpec


@dataclass(frozen=True)
class TypeInfo:
    arch: Arch
    gpus: int
    ena_express: bool


def instance_types(aws: Aws, names: list[str]) -> dict[str, TypeInfo]:
    try:
        described = aws.items("describe_instance_types", "InstanceTypes", InstanceTypes=sorted(set(names)))
    except AwsError as exc:
        if exc.code.startswith("InvalidInstanceType"):
            raise PlanUnavailableError(
                f"{aws.region} does not offer {', '.join(sorted(set(names)))}: {exc.aws_message}"
            ) from None
        raise
    return {
        t["InstanceType"]: TypeInfo(
            arch="arm64" if "arm64" in t["ProcessorInfo"]["SupportedArchitectures"] else "x86_64",
            gpus=sum(g.get("Count", 0) for g in t.get("GpuInfo", {}).get("Gpus", [])),
            ena_express=bool(t.get("NetworkInfo", {}).get("EnaSrdSupported", False)),
        )
        for t in described
    }


def learner_group(plan: ClusterPlan) -> NodeGroup:
    """The plan's GPU machine; a partitioned plan (full-graph training on GPU-less workers) has none."""
    if plan.learner is None:
        raise UsageError(
            f"plan {plan.label!r} trains on GPU-less workers; `provision up` builds sampled-training clusters "
            "(a GPU learner and memory machines)"
        )
    return plan.learner


def plan_types(plan: ClusterPlan) -> list[str]:
    return [learner_group(plan).instance_type] + ([plan.memory.instance_type] if plan.memory else [])


def learner_slots(plan: ClusterPlan, gpus: int) -> int:
    """MPI slots on each learner machine: the ranks the plan trains on per machine, so that Open
    MPI, which fills the hostfile's slots in order, gives every learner machine its share (a plan
    that prices no GPU gets one slot per GPU, for a user's own `--learners`); a lone machine also
    runs the memory rank, so it has one slot more."""
    ranks = plan.learner_ranks // learner_group(plan).count if plan.learner_ranks else max(1, gpus)
    return ranks + (plan.memory is None)


def node_specs(aws: Aws, plan: ClusterPlan, images: AmiResolver, kms_key_id: str | None = None) -> list[NodeSpec]:
    """The plan's machines, learners first (learner-0 runs the job); data volumes on the memory
    machines (or the lone learner).

    ``kms_key_id`` encrypts every volume (None: the account's default EBS key).
    """
    types = instance_types(aws, plan_types(plan))
    ena_express = plan.data_path is not None and plan.data_path.ena_express
    unsupported = sorted(name for name, info in types.items() if ena_express and not info.ena_express)
    if unsupported:
        raise PlanUnavailableError(
            f"the plan runs ENA Express, which {aws.region} says {', '.join(unsupported)} does not support"
        )
    v = plan.volume
    volume = DataVolume(
        size_gb=v.size_gb, iops=v.iops, throughput_mbps=v.throughput_mbps, usd_per_hour=v.usd_per_hour_each
    )

    def spec(group: NodeGroup, role: Role, index: int, with_volume: bool) -> NodeSpec:
        info = types[group.instance_type]
        ami = images.resolve(role, info.arch)
        return NodeSpec(
            node=f"{role}-{index}",
            role=role,
            instance_type=group.instance_type,
            market=group.market,
            usd_per_hour=group.usd_per_hour_each,
            arch=info.arch,
            gpus=info.gpus,
            slots=learner_slots(plan, info.gpus) if role == "learner" else 1,
            ami=ami,
            root_volume=images.root_volume(ami),
            volume=volume if with_volume else None,
            kms_key_id=kms_key_id,
            ena_express=ena_express,
        )

    learner = learner_group(plan)
    nodes = [spec(learner, "learner", i, plan.memory is None) for i in range(learner.count)]
    if plan.memory:
        nodes += [spec(plan.memory, "memory", i, True) for i in range(plan.memory.count)]
    return nodes
