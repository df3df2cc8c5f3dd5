"""Every EBS volume of the cluster is encrypted, root volumes included, with one key: --kms-key or the default.

moto 5.2.5 stores whatever KmsKeyId it is given without asking its KMS, so "a key AWS does not know"
cannot be tested here; on AWS it fails the launch (see test_launch's stopped-at-launch test).
"""

from __future__ import annotations

import pytest

from foundation.errors import UsageError
from provisioning import bringup, tags, teardown
from provisioning.encryption import parse_kms_key
from tests.provisioning.conftest import live_instances, plain_client

DEFAULT_EBS_KEY_ALIAS = "alias/aws/ebs"


@pytest.fixture
def kms(moto):
    return plain_client(moto.url, "kms")


@pytest.fixture
def customer_key(kms) -> str:
    """A customer-managed key in moto's KMS (its ARN); scheduled for deletion afterwards."""
    key = kms.create_key(Description="memorybridge test key")["KeyMetadata"]
    yield key["Arn"]
    kms.schedule_key_deletion(KeyId=key["KeyId"], PendingWindowInDays=7)


def volumes_by_instance(moto) -> dict[str, tuple[dict, list[dict]]]:
    """node -> (instance, the volumes attached to it, found by attachment)."""
    return {
        tags.tags_of(i)[tags.NODE]: (
            i,
            moto.ec2.describe_volumes(Filters=[{"Name": "attachment.instance-id", "Values": [i["InstanceId"]]}])[
                "Volumes"
            ],
        )
        for i in live_instances(moto)
    }


def check_every_volume_encrypted(moto, memory_ami: dict[str, str]) -> set[str]:
    """Asserts root and data volumes of every instance are encrypted as `up` means to; their KMS key ids."""
    image = moto.ec2.describe_images(ImageIds=[memory_ami["x86_64"]])["Images"][0]
    root_size = next(m for m in image["BlockDeviceMappings"] if m["DeviceName"] == image["RootDeviceName"])["Ebs"][
        "VolumeSize"
    ]
    found = volumes_by_instance(moto)
    assert sorted(found) == ["learner-0", "memory-0", "memory-1"]
    keys = set()
    for node, (instance, volumes) in found.items():
        by_device = {v["Attachments"][0]["Device"]: v for v in volumes}
        root = by_device.pop(instance["RootDeviceName"])
        assert (root["Encrypted"], root["VolumeType"], root["Size"]) == (True, "gp3", root_size), node
        mapping = {m["DeviceName"]: m["Ebs"] for m in instance["BlockDeviceMappings"]}
        assert mapping[instance["RootDeviceName"]]["DeleteOnTermination"] is True, node
        assert tags.tags_of(root)[tags.ROLE] == "root-volume"
        data = list(by_device.values())
        assert [v["Encrypted"] for v in data] == ([] if node == "learner-0" else [True]), node
        keys |= {v["KmsKeyId"] for v in [root, *data]}
    return keys


def test_up_encrypts_every_root_and_data_volume_with_the_default_ebs_key(
    aws, moto, kms, two_level_plan, make_options, memory_ami
):
    bringup.up(aws, two_level_plan, make_options())
    default_key = kms.describe_key(KeyId=DEFAULT_EBS_KEY_ALIAS)["KeyMetadata"]["Arn"]
    assert check_every_volume_encrypted(moto, memory_ami) == {default_key}
    teardown.down(aws, "c1")


def test_kms_key_encrypts_every_root_and_data_volume(aws, moto, two_level_plan, make_options, memory_ami, customer_key):
    result = bringup.up(aws, two_level_plan, make_options(kms_key_id=customer_key))
    assert check_every_volume_encrypted(moto, memory_ami) == {customer_key}
    assert len(result.state.nodes) == 3
    teardown.down(aws, "c1")


def test_dry_run_names_the_root_device_and_the_key_of_every_node(aws, moto, two_level_plan, make_options):
    opts = make_options(kms_key_id="alias/gnn")
    report = bringup.dry_run(aws, two_level_plan, opts, opts.public_key_file)
    for option in report.options:
        assert {n.kms_key_id for n in option.nodes} == {"alias/gnn"}
        assert {(n.root_volume.device_name, n.root_volume.volume_type) for n in option.nodes} == {("/dev/xvda", "gp3")}


@pytest.mark.parametrize("text", ["", " ", "\t", "alias/my key", "arn:aws:kms:us-east-1:111122223333:key/abc\n"])
def test_obviously_malformed_keys_are_refused(text):
    with pytest.raises(UsageError, match="--kms-key"):
        parse_kms_key(text)


@pytest.mark.parametrize(
    "text", ["1234abcd-12ab-34cd-56ef-1234567890ab", "alias/gnn", "arn:aws:kms:us-east-1:111122223333:alias/gnn"]
)
def test_key_ids_arns_and_aliases_pass(text):
    assert parse_kms_key(text) == text
