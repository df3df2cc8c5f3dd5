"""The default VPC's subnets, and the cluster's security group with exactly the rules it needs.

Ingress is two kinds of rule and nothing else: all TCP from members of the same group
(self-referencing, so MPI can open its ephemeral ports between the machines) and SSH (22/tcp) from
each ``--ssh-cidr``. No CIDR means no SSH rule: nothing is open to 0.0.0.0/0 unless the user asked.
``up`` reconciles the rules every time (adds missing, revokes extra), so re-running it with another
``--ssh-cidr`` moves SSH access instead of piling up rules. Egress keeps EC2's default (all
outbound), which the machines need to install packages.
"""

from __future__ import annotations

import ipaddress

from foundation.errors import UsageError
from provisioning import tags
from provisioning.aws import Aws
from provisioning.errors import ProvisioningError, refuse_foreign_name
from provisioning.ledger import Ledger

Rule = tuple[str, int, int, str]  # (protocol, from port, to port, source: CIDR or security group id)
SSH_PORT = 22
WORLD = {"0.0.0.0/0", "::/0"}


def parse_cidr(text: str) -> str:
    try:
        return str(ipaddress.ip_network(text.strip(), strict=True))
    except ValueError as exc:
        raise UsageError(f"--ssh-cidr: {text!r} is not a network like 203.0.113.7/32 ({exc})") from None


def default_subnets(aws: Aws) -> tuple[str, dict[str, str]]:
    """The default VPC's id and its default subnet per availability zone."""
    vpcs = aws.call("describe_vpcs", Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
    if not vpcs:
        raise ProvisioningError(
            f"region {aws.region} has no default VPC; create one with "
            "`aws ec2 create-default-vpc` (provision launches into the default VPC)"
        )
    vpc = vpcs[0]["VpcId"]
    subnets = aws.items(
        "describe_subnets",
        "Subnets",
        Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "default-for-az", "Values": ["true"]}],
    )
    return vpc, {s["AvailabilityZone"]: s["SubnetId"] for s in subnets}


def wanted_rules(group_id: str, ssh_cidrs: list[str]) -> set[Rule]:
    return {("tcp", 0, 65535, group_id)} | {("tcp", SSH_PORT, SSH_PORT, cidr) for cidr in ssh_cidrs}


def ingress_rules(group: dict) -> set[Rule]:
    """A described security group's ingress as Rule tuples (one per source)."""
    rules = set()
    for perm in group.get("IpPermissions", []):
        key = (perm["IpProtocol"], perm.get("FromPort", -1), perm.get("ToPort", -1))
        sources = (
            [r["CidrIp"] for r in perm.get("IpRanges", [])]
            + [r["CidrIpv6"] for r in perm.get("Ipv6Ranges", [])]
            + [p["GroupId"] for p in perm.get("UserIdGroupPairs", [])]
        )
        rules |= {(*key, source) for source in sources}
    return rules


def _permissions(rules: set[Rule]) -> list[dict]:
    out = []
    for protocol, low, high, source in sorted(rules):
        perm: dict = {"IpProtocol": protocol, "FromPort": low, "ToPort": high}
        if source.startswith("sg-"):
            perm["UserIdGroupPairs"] = [{"GroupId": source}]
        elif ":" in source:
            perm["Ipv6Ranges"] = [{"CidrIpv6": source}]
        else:
            perm["IpRanges"] = [{"CidrIp": source}]
        out.append(perm)
    return out


def describe_rules(rules: set[Rule], group_id: str) -> list[str]:
    """Human-readable rules ('all TCP from members of sg-...', 'SSH from 203.0.113.7/32')."""
    return [
        f"all TCP from members of {group_id}" if source == group_id else f"SSH (22/tcp) from {source}"
        for _, _, _, source in sorted(rules, key=lambda r: (r[3] != group_id, r[3]))
    ]


def ensure_security_group(ledger: Ledger, vpc_id: str, ssh_cidrs: list[str]) -> str:
    """Find the cluster's security group by tag or create it; make its ingress exactly the wanted rules."""
    aws = ledger.aws
    found = aws.items("describe_security_groups", "SecurityGroups", Filters=tags.filters(ledger.cluster))
    if found:
        group = found[0]
    else:
        name = tags.resource_name(ledger.cluster)
        with refuse_foreign_name("InvalidGroup.Duplicate", "security group", name, ledger.cluster):
            group_id = aws.call(
                "create_security_group",
                GroupName=name,
                VpcId=vpc_id,
                Description=f"memorybridge cluster {ledger.cluster}: all TCP between members, SSH from chosen CIDRs",
                TagSpecifications=[tags.tag_specification("security-group", ledger.tags("security-group", 0))],
            )["GroupId"]
        ledger.created.add("security_groups", group_id)
        ledger.report(f"created security group {group_id} ({name})")
        group = {"GroupId": group_id}
    group_id = group["GroupId"]
    have, want = ingress_rules(group), wanted_rules(group_id, ssh_cidrs)
    if have - want:
        aws.call("revoke_security_group_ingress", GroupId=group_id, IpPermissions=_permissions(have - want))
    if want - have:
        aws.call("authorize_security_group_ingress", GroupId=group_id, IpPermissions=_permissions(want - have))
    return group_id
