"""`provision up`: converge on one running cluster for a plan, failing over by zone then by plan.

1. Look up what already exists by tags. A cluster with live instances pins the plan (it must be
   the same plan file, by plan id) and the zone: ``up`` then only creates what is missing, so
   running it twice gives one cluster.
2. Security group (rules reconciled) and key pair, shared by every zone attempt.
3. For each plan in failover order and each zone offering its types: a placement group, one
   instance per node, wait until running, data volumes created and attached, wait for status
   checks. A capacity error rolls back this zone attempt and moves to the next zone; a plan-level
   error (quota, unknown type, no image) to the next plan.
4. Keep the wheel the machines install and what `up` was given (``launch.json``), so that a
   machine lost later can be replaced by running `up` again (``provisioning.job.recovery``), and
   write the state file and hostfile. Nothing goes into the state directory before the cluster
   runs.

Any other failure, Ctrl-C included, rolls back everything this run created, so a failed ``up``
leaves nothing behind, in AWS or in the state directory (and never touches what an earlier run
made).

A dry run makes only read-only calls; without AWS credentials it makes none and lists what the
plan file alone says, naming the checks it could not make.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from contracts.cluster import ClusterState, NodeState, Role, ShippedWheel
from contracts.plan import ClusterPlan, Recommendation
from foundation.errors import UsageError
from foundation.fileio import write_model
from provisioning import failover, instances, statefile, tags, userdata
from provisioning.amis import AmiResolver
from provisioning.aws import Aws
from provisioning.encryption import key_label
from provisioning.errors import (
    CleanupError,
    ClusterConflictError,
    NoCapacityError,
    PlanUnavailableError,
    ProvisioningError,
)
from provisioning.inventory import Inventory, discover
from provisioning.keypair import ensure_key_pair, find_public_key, missing_key
from provisioning.layout import learner_group, node_specs, plan_types
from provisioning.ledger import Ledger
from provisioning.models import (
    ROOT_VOLUME_TYPE,
    Attempt,
    DryRun,
    LaunchInputs,
    LaunchOption,
    PlannedCluster,
    PlannedResource,
    SkippedPlan,
    UpResult,
)
from provisioning.network import default_subnets, describe_rules, ensure_security_group, wanted_rules
from provisioning.placement import ensure_placement_group
from provisioning.volumes import ensure_volumes
from provisioning.wheel import ROLE_EXTRAS, place
from provisioning.wheel import pins as wheel_pins

RUNNING = ("pending", "running")
STOPPED = ("stopping", "stopped")
# What a dry run asks the region; without AWS credentials it says it asked none of it.
AWS_CHECKS = (
    "the region's default VPC and its subnets",
    "resources already tagged for the cluster",
    "the instance types in the region (architecture, GPUs, ENA Express)",
    "the zones that offer them, in failover order, and the plan file's alternatives",
    "the machine images (SSM parameters, describe_images) and their root volumes",
)
UNKNOWN_ZONE = "ZONE"  # in a placement group's name, before the zone is known


@dataclass(frozen=True, kw_only=True)
class Request:
    """What `up` and its dry run are asked: the cluster and how to build it."""

    cluster: str
    state_dir: Path
    ssh_cidrs: list[str] = field(default_factory=list)
    ami_overrides: dict[Role, str] = field(default_factory=dict)
    ssh_user: str = "ec2-user"
    kms_key_id: str | None = None  # encrypts every volume; None: the account's default EBS key


@dataclass(frozen=True, kw_only=True)
class UpOptions(Request):
    """A request with what only a real `up` needs: the SSH key to import and the wheel to install."""

    public_key: str
    public_key_file: Path
    wheel: ShippedWheel | None = None  # what the machines install; `up` refuses to run without it
    # Where the wheel is now: kept in the state directory once the cluster runs (None: kept already).
    wheel_file: Path | None = None
    requires: list[str] = field(default_factory=list)  # the wheel's Requires-Dist lines

    @classmethod
    def of(cls, request: Request, **more: Any) -> UpOptions:
        """``request`` with what a real `up` adds (``public_key``, ``public_key_file``, ``wheel``...)."""
        return cls(**{f.name: getattr(request, f.name) for f in fields(Request)}, **more)


def up(aws: Aws, rec: Recommendation, opts: UpOptions, report: Callable[[str], None] = lambda _: None) -> UpResult:
    if opts.wheel is None:
        raise UsageError("no wheel to install: `up` needs the MemoryBridge wheel the machines run (--wheel)")
    statefile.check_writable(opts.state_dir)
    ledger = Ledger(aws, opts.cluster, rec.plan_id, report)
    try:
        return _up(ledger, rec, opts)
    except BaseException as exc:
        try:
            ledger.rollback()
        except CleanupError as cleanup:
            raise CleanupError(
                f"{exc}; rolling back failed too: {cleanup}. Run `provision down {opts.cluster} "
                f"--region {aws.region}` to delete what is left"
            ) from exc
        raise


def _up(ledger: Ledger, rec: Recommendation, opts: UpOptions) -> UpResult:
    aws = ledger.aws
    vpc, subnets = default_subnets(aws)
    existing = discover(aws, opts.cluster)
    choices, pinned_zone = _choices(rec, existing, opts.cluster)
    if pinned_zone and pinned_zone not in subnets:
        raise ProvisioningError(
            f"cluster {opts.cluster} runs in {pinned_zone}, which has no default subnet; "
            f"run `provision down {opts.cluster}` first"
        )
    images = AmiResolver(aws, opts.ami_overrides)
    group_id = ensure_security_group(ledger, vpc, opts.ssh_cidrs)
    key_name = ensure_key_pair(ledger, opts.public_key)
    attempts: list[Attempt] = []
    for rank, plan in choices:
        try:
            option = _prepare(aws, rank, plan, images, subnets, opts.kms_key_id)
        except PlanUnavailableError as exc:
            attempts.append(Attempt(rank=rank, label=plan.label, zone=None, outcome="unavailable", detail=str(exc)))
            ledger.report(f"plan {rank} ({plan.label}) is unavailable: {exc}")
            continue
        for zone in [pinned_zone] if pinned_zone else option.zones:
            ledger.report(f"trying plan {rank} ({plan.label}) in {zone}")
            try:
                state = _launch_in_zone(ledger, option, zone, subnets[zone], group_id, key_name, existing, opts)
            except Exception as exc:
                kind = failover.classify(exc)
                if kind is None:
                    raise
                attempts.append(
                    Attempt(
                        rank=rank,
                        label=plan.label,
                        zone=zone,
                        outcome="capacity" if kind == "zone" else "unavailable",
                        detail=str(exc),
                    )
                )
                ledger.report(f"{exc}; {'next zone' if kind == 'zone' else 'next plan'}")
                ledger.rollback(zonal_only=True)
                if kind == "plan":
                    break
                continue
            attempts.append(Attempt(rank=rank, label=plan.label, zone=zone, outcome="launched"))
            state = state.model_copy(update={"feature_bytes": feature_bytes(rec)})
            if opts.wheel_file is not None:
                place(opts.wheel_file, statefile.wheel_dir(opts.state_dir, ledger.cluster))
            write_model(statefile.launch_inputs_path(opts.state_dir, ledger.cluster), launch_inputs(rec, opts))
            path = statefile.write(opts.state_dir, state)
            return UpResult(state=state, state_file=str(path), attempts=attempts, created=ledger.created.labels())
    tried = "; ".join(f"plan {a.rank} ({a.label}){' in ' + a.zone if a.zone else ''}: {a.detail}" for a in attempts)
    raise NoCapacityError(f"no plan could be launched in {aws.region}: {tried}")


def launch_inputs(rec: Recommendation, opts: UpOptions) -> LaunchInputs:
    return LaunchInputs(
        plan=rec,
        public_key=opts.public_key,
        public_key_file=str(opts.public_key_file),
        ssh_cidrs=opts.ssh_cidrs,
        ami_overrides=opts.ami_overrides,
        ssh_user=opts.ssh_user,
        kms_key_id=opts.kms_key_id,
        requires=opts.requires,
    )


def options_from(inputs: LaunchInputs, state_dir: Path, cluster: str, wheel: ShippedWheel | None) -> UpOptions:
    """The options `up` was given, back from what it kept (``launch_inputs``)."""
    return UpOptions(
        cluster=cluster,
        public_key=inputs.public_key,
        public_key_file=Path(inputs.public_key_file),
        state_dir=state_dir,
        ssh_cidrs=inputs.ssh_cidrs,
        ami_overrides=inputs.ami_overrides,
        wheel=wheel,
        requires=inputs.requires,
        ssh_user=inputs.ssh_user,
        kms_key_id=inputs.kms_key_id,
    )


def dry_run(aws: Aws, rec: Recommendation, request: Request, ssh_key: Path | None) -> DryRun:
    """What `up` would do, from read-only calls: plans with their machines, images and zones."""
    _, subnets = default_subnets(aws)
    existing = discover(aws, request.cluster)
    choices, pinned_zone = _choices(rec, existing, request.cluster)
    images = AmiResolver(aws, request.ami_overrides)
    options, skipped = [], []
    for rank, plan in choices:
        try:
            option = _prepare(aws, rank, plan, images, subnets, request.kms_key_id)
        except PlanUnavailableError as exc:
            skipped.append(SkippedPlan(rank=rank, label=plan.label, reason=str(exc)))
            continue
        options.append(option.model_copy(update={"zones": [pinned_zone]}) if pinned_zone else option)
    first = options[0] if options else None
    rank, plan = (first.rank, first.plan) if first else choices[0]
    return DryRun(
        cluster=request.cluster,
        region=aws.region,
        existing=not existing.is_empty(),
        creates=planned(rank, plan, request, _key_source(ssh_key), first.zones[0] if first else None),
        options=options,
        skipped=skipped,
    )


def offline_dry_run(region: str, rec: Recommendation, request: Request, ssh_key: Path | None) -> DryRun:
    """What `up` would create, from the plan file alone: for trying it without AWS credentials."""
    rank, plan = failover.candidates(rec)[0]
    return DryRun(
        cluster=request.cluster,
        region=region,
        existing=None,
        creates=planned(rank, plan, request, _key_source(ssh_key), None),
        options=[],
        skipped=[],
        not_checked=list(AWS_CHECKS),
    )


def planned(rank: int, plan: ClusterPlan, request: Request, key_source: str, zone: str | None) -> PlannedCluster:
    """The resources `up` creates when ``plan`` launches (in ``zone``, where known), as the plan says them."""
    shared = tags.resource_name(request.cluster)  # the security group's and the key pair's name
    machines = [("learner", learner_group(plan))] + ([("memory", plan.memory)] if plan.memory else [])
    data_role, data_group = machines[-1]  # data volumes: on the memory machines, or the learners alone
    encrypted = f"encrypted with {key_label(request.kms_key_id)}"
    volume = plan.volume
    rules = describe_rules(wanted_rules(shared, request.ssh_cidrs), shared)
    resources = [
        PlannedResource(kind="security-group", name=shared, detail=f"in the default VPC; {'; '.join(rules)}"),
        PlannedResource(kind="key-pair", name=shared, detail=key_source),
        PlannedResource(
            kind="placement-group",
            name=tags.resource_name(request.cluster, zone or UNKNOWN_ZONE),
            detail="strategy cluster, in the zone the machines launch in",
        ),
        *(
            PlannedResource(
                kind="instance",
                name=_nodes(role, group.count),
                count=group.count,
                usd_per_hour_each=group.usd_per_hour_each,
                detail=f"{group.instance_type} {group.market}"
                + (f", image {request.ami_overrides[role]}" if role in request.ami_overrides else ""),
            )
            for role, group in machines
        ),
        PlannedResource(
            kind="volume",
            name="root volumes",
            count=sum(group.count for _, group in machines),
            detail=f"one per instance: the image's root device at its size, {ROOT_VOLUME_TYPE}, {encrypted}, "
            "deleted with the instance",
        ),
        PlannedResource(
            kind="volume",
            name=f"data volumes of {_nodes(data_role, data_group.count)}",
            count=data_group.count,
            usd_per_hour_each=volume.usd_per_hour_each,
            detail=f"{volume.type} {volume.size_gb} GB, {volume.iops} IOPS, {volume.throughput_mbps} MB/s, {encrypted}",
        ),
    ]
    return PlannedCluster(
        rank=rank, label=plan.label, usd_per_hour=plan.usd_per_hour, total_usd=plan.total_usd, resources=resources
    )


def _nodes(role: str, count: int) -> str:
    """'learner-0', or 'memory-0 ... memory-3' for several."""
    return f"{role}-0" if count == 1 else f"{role}-0 ... {role}-{count - 1}"


def _key_source(ssh_key: Path | None) -> str:
    """Where the key pair's public key would come from, or why there is none (a dry run goes on)."""
    found = find_public_key(ssh_key)
    return f"imported from {found[0]}" if found else f"up needs a public key to import: {missing_key(ssh_key)}"


def _choices(
    rec: Recommendation, existing: Inventory, cluster: str
) -> tuple[list[tuple[int, ClusterPlan]], str | None]:
    """Plans to try and the zone to stay in: everything, or the plan and zone of the live cluster."""
    ranked = failover.candidates(rec)
    stopped = [i["InstanceId"] for i in existing.instances if i["State"]["Name"] in STOPPED]
    if stopped:
        raise ClusterConflictError(
            f"cluster {cluster} has stopped instances ({', '.join(stopped)}); start them "
            f"or run `provision down {cluster}` first"
        )
    live = [i for i in existing.instances if i["State"]["Name"] in RUNNING]
    if not live:
        return ranked, None
    found = tags.tags_of(live[0])
    plans = dict(ranked)
    rank = int(found.get(tags.PLAN_RANK, "-1"))
    if found.get(tags.PLAN_ID) != rec.plan_id or rank not in plans:
        raise ClusterConflictError(
            f"cluster {cluster} already runs plan {found.get(tags.PLAN_ID)} (rank "
            f"{found.get(tags.PLAN_RANK)}), not one of plan file {rec.plan_id}; run "
            f"`provision down {cluster}` first or choose another --name"
        )
    return [(rank, plans[rank])], live[0]["Placement"]["AvailabilityZone"]


def _prepare(
    aws: Aws, rank: int, plan: ClusterPlan, images: AmiResolver, subnets: dict[str, str], kms_key_id: str | None
) -> LaunchOption:
    nodes = node_specs(aws, plan, images, kms_key_id)
    zones = failover.zones_offering(aws, plan_types(plan), subnets)
    if not zones:
        raise PlanUnavailableError(
            f"no zone of {aws.region} with a default subnet offers {', '.join(plan_types(plan))}"
        )
    return LaunchOption(rank=rank, plan=plan, zones=zones, nodes=nodes)


def _launch_in_zone(
    ledger: Ledger,
    option: LaunchOption,
    zone: str,
    subnet: str,
    group_id: str,
    key_name: str,
    existing: Inventory,
    opts: UpOptions,
) -> ClusterState:
    wheel = opts.wheel
    assert wheel is not None  # checked by `up` before anything is created
    placement = ensure_placement_group(ledger, zone, option.rank)
    live = {tags.tags_of(i).get(tags.NODE): i for i in existing.instances if i["State"]["Name"] in RUNNING}
    ids: dict[str, str] = {}
    for node in option.nodes:
        found = live.get(node.node)
        if found and found["InstanceType"] != node.instance_type:
            raise ClusterConflictError(
                f"{node.node} of cluster {ledger.cluster} is a {found['InstanceType']}, the plan "
                f"says {node.instance_type}; run `provision down {ledger.cluster}` first"
            )
        ids[node.node] = (
            found["InstanceId"]
            if found
            else instances.launch(
                ledger,
                node,
                option.rank,
                zone,
                subnet,
                group_id,
                key_name,
                placement,
                userdata.render(
                    ledger.cluster, node, wheel, wheel_pins(opts.requires, ROLE_EXTRAS[node.role]), opts.ssh_user
                ),
                wheel.version,
            )
        )
    instance_ids = list(ids.values())
    instances.wait_running(ledger, instance_ids)
    described = instances.describe(ledger, instance_ids)
    volumes = ensure_volumes(ledger, [(node, described[ids[node.node]]) for node in option.nodes], option.rank)
    instances.wait_healthy(ledger, instance_ids)
    plan = option.plan
    nodes = [
        NodeState(
            node=n.node,
            role=n.role,
            instance_id=ids[n.node],
            instance_type=n.instance_type,
            arch=n.arch,
            market=n.market,
            private_ip=described[ids[n.node]]["PrivateIpAddress"],
            public_ip=described[ids[n.node]].get("PublicIpAddress"),
            usd_per_hour=n.usd_per_hour,
            gpus=n.gpus,
            slots=n.slots,
            volume_id=volumes.get(n.node),
        )
        for n in option.nodes
    ]
    return ClusterState(
        name=ledger.cluster,
        region=ledger.aws.region,
        availability_zone=zone,
        plan_id=ledger.plan_id,
        plan_rank=option.rank,
        plan_label=plan.label,
        usd_per_hour=plan.usd_per_hour,
        predicted_total_usd=plan.total_usd,
        security_group_id=group_id,
        key_name=key_name,
        placement_group=placement,
        ssh_user=opts.ssh_user,
        hostfile=str(statefile.hostfile_path(opts.state_dir, ledger.cluster)),
        written_at=dt.datetime.now(dt.UTC),
        nodes=nodes,
        plan=plan,
        wheel=wheel,
    )


def feature_bytes(rec: Recommendation) -> int:
    """The dataset's feature matrix in bytes, as the plan's profile describes it."""
    return rec.profile.feature_bytes
