"""Deleting resources in dependency order, waiting for each step: shared by `down` and rollback.

Order: terminate instances and wait until they are terminated (a running instance holds its
volumes, placement group and security group); delete data volumes (detaching any attached to an
instance that stays) and wait until they are gone; then placement groups, security groups (retried
while EC2 still counts a terminated instance's network interface) and key pairs. "Not found" counts
as deleted, so running it again is safe. One failure does not stop the rest; what is left is named
in the CleanupError raised at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from provisioning.aws import Aws
from provisioning.errors import CleanupError, ProvisioningError
from provisioning.inventory import ResourceIds, discover

NOT_FOUND = frozenset(
    {
        "InvalidInstanceID.NotFound",
        "InvalidVolume.NotFound",
        "InvalidPlacementGroup.Unknown",
        "InvalidGroup.NotFound",
        "InvalidKeyPair.NotFound",
    }
)


def delete(aws: Aws, doomed: ResourceIds, report: Callable[[str], None] = lambda _: None) -> ResourceIds:
    """Delete ``doomed`` and wait; return what is gone. Raises CleanupError if anything is left."""
    deleted, failures = ResourceIds(), []

    def attempt(kind: str, ident: str, method: str, extra_codes: tuple[str, ...] = (), **params) -> bool:
        try:
            aws.call(method, extra_codes=extra_codes, **params)
        except ProvisioningError as exc:
            if getattr(exc, "code", None) not in NOT_FOUND:
                failures.append(f"{kind.removesuffix('s').replace('_', '-')} {ident} ({exc})")
                return False
        deleted.add(kind, ident)
        return True

    def wait(waiter: str, what: str, **params) -> None:
        try:
            aws.wait(waiter, what, **params)
        except ProvisioningError as exc:
            failures.append(str(exc))

    terminating = [i for i in doomed.instances if attempt("instances", i, "terminate_instances", InstanceIds=[i])]
    if terminating:
        report(f"terminating {len(terminating)} instance(s) and waiting until they are gone")
        wait("instance_terminated", "instances to terminate", InstanceIds=terminating)
    if doomed.volumes:
        described = {
            v["VolumeId"]: v
            for v in aws.items("describe_volumes", "Volumes", Filters=[{"Name": "volume-id", "Values": doomed.volumes}])
        }
        for volume in doomed.volumes:
            if volume not in described:  # already gone, like a root volume deleted with its instance
                deleted.add("volumes", volume)
        _detach_from_survivors(aws, described.values(), doomed.instances, wait)
        going = [
            v
            for v, d in described.items()
            if d["State"] == "deleting" or attempt("volumes", v, "delete_volume", ("VolumeInUse",), VolumeId=v)
        ]
        if going:
            report(f"deleting {len(going)} volume(s)")
            for volume in going:
                deleted.add("volumes", volume)
            wait("volume_deleted", "volumes to be deleted", VolumeIds=going)
    for name in doomed.placement_groups:
        attempt("placement_groups", name, "delete_placement_group", GroupName=name)
    for group in doomed.security_groups:
        attempt("security_groups", group, "delete_security_group", ("DependencyViolation",), GroupId=group)
    for name in doomed.key_pairs:
        attempt("key_pairs", name, "delete_key_pair", KeyName=name)
    if failures:
        raise CleanupError(
            "could not delete everything: "
            + "; ".join(failures)
            + "; run `provision down` for the cluster again to retry"
        )
    return deleted


def _detach_from_survivors(
    aws: Aws, volumes: Iterable[dict], doomed_instances: list[str], wait: Callable[..., None]
) -> None:
    """Volumes attached to an instance that is not being deleted must be detached first."""
    held = [
        (v["VolumeId"], a["InstanceId"])
        for v in volumes
        for a in v.get("Attachments", [])
        if a["InstanceId"] not in doomed_instances
    ]
    for volume, instance in held:
        aws.call("detach_volume", VolumeId=volume, InstanceId=instance)
    if held:
        wait("volume_available", "volumes to detach", VolumeIds=[volume for volume, _ in held])


def down(aws: Aws, cluster: str, report: Callable[[str], None] = lambda _: None) -> ResourceIds:
    """Delete every resource tagged for ``cluster``, then check by tags that nothing is left."""
    deleted = delete(aws, discover(aws, cluster).ids(), report)
    left = discover(aws, cluster).ids()
    if not left.is_empty():
        raise CleanupError(
            f"still tagged for cluster {cluster} after deleting: {', '.join(left.labels())}; run `provision down` again"
        )
    return deleted
