"""The security group: exactly self-referencing all-TCP plus SSH from the given CIDRs, reconciled on re-run."""

from __future__ import annotations

import pytest

from foundation.errors import UsageError
from provisioning import teardown
from provisioning.errors import ClusterConflictError
from provisioning.ledger import Ledger
from provisioning.network import default_subnets, ensure_security_group, ingress_rules, parse_cidr


def group(moto, group_id: str) -> dict:
    return moto.ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]


def test_rules_are_exactly_self_all_tcp_and_ssh_from_the_cidr(aws, moto):
    ledger = Ledger(aws, "c1", "plan")
    vpc, _ = default_subnets(aws)
    group_id = ensure_security_group(ledger, vpc, ["203.0.113.7/32"])
    permissions = group(moto, group_id)["IpPermissions"]
    assert sorted((p["IpProtocol"], p["FromPort"], p["ToPort"]) for p in permissions) == [
        ("tcp", 0, 65535),
        ("tcp", 22, 22),
    ]
    by_port = {p["FromPort"]: p for p in permissions}
    assert [pair["GroupId"] for pair in by_port[0]["UserIdGroupPairs"]] == [group_id]
    assert by_port[0].get("IpRanges", []) == [] and by_port[0].get("Ipv6Ranges", []) == []
    assert [r["CidrIp"] for r in by_port[22]["IpRanges"]] == ["203.0.113.7/32"]
    assert by_port[22].get("UserIdGroupPairs", []) == [] and by_port[22].get("Ipv6Ranges", []) == []
    assert group(moto, group_id)["VpcId"] == vpc
    teardown.delete(aws, ledger.created)


def test_no_cidr_means_no_ssh_and_nothing_open_to_the_world(aws, moto):
    ledger = Ledger(aws, "c1", "plan")
    group_id = ensure_security_group(ledger, default_subnets(aws)[0], [])
    assert ingress_rules(group(moto, group_id)) == {("tcp", 0, 65535, group_id)}
    teardown.delete(aws, ledger.created)


def test_rerun_moves_ssh_to_the_new_cidrs(aws, moto):
    ledger = Ledger(aws, "c1", "plan")
    vpc, _ = default_subnets(aws)
    group_id = ensure_security_group(ledger, vpc, ["203.0.113.7/32"])
    again = ensure_security_group(Ledger(aws, "c1", "plan"), vpc, ["198.51.100.0/24", "2001:db8::/64"])
    assert again == group_id
    assert ingress_rules(group(moto, group_id)) == {
        ("tcp", 0, 65535, group_id),
        ("tcp", 22, 22, "198.51.100.0/24"),
        ("tcp", 22, 22, "2001:db8::/64"),
    }
    teardown.delete(aws, ledger.created)


def test_an_untagged_group_with_the_name_is_not_taken_over(aws, moto):
    vpc, _ = default_subnets(aws)
    foreign = moto.ec2.create_security_group(GroupName="memorybridge-c1", Description="someone else's", VpcId=vpc)
    with pytest.raises(ClusterConflictError, match="not tagged for cluster c1"):
        ensure_security_group(Ledger(aws, "c1", "plan"), vpc, [])
    moto.ec2.delete_security_group(GroupId=foreign["GroupId"])


@pytest.mark.parametrize("text", ["10.0.0.1/8", "not-a-network", "300.1.1.1/32"])
def test_bad_cidrs_are_usage_errors(text):
    with pytest.raises(UsageError, match="--ssh-cidr"):
        parse_cidr(text)


def test_cidrs_are_normalised():
    assert parse_cidr(" 203.0.113.7/32 ") == "203.0.113.7/32"
    assert parse_cidr("2001:DB8::/64") == "2001:db8::/64"
