"""Images per role and architecture: override, SSM public parameter, then describe_images."""

from __future__ import annotations

import pytest

from provisioning.amis import IMAGE_FAMILIES, AmiResolver, ImageFamily
from provisioning.errors import AmiNotFoundError
from tests.provisioning.ec2fakes import NS, ec2_response


def test_memory_images_come_from_the_ssm_public_parameters(aws, memory_ami):
    resolver = AmiResolver(aws)
    assert resolver.resolve("memory", "x86_64") == memory_ami["x86_64"]
    assert resolver.resolve("memory", "arm64") == memory_ami["arm64"]


def test_without_the_parameter_the_newest_matching_amazon_image_is_used(aws, moto):
    """moto has no such parameter, but has Amazon-owned 'Deep Learning AMI' images."""
    families = {
        **IMAGE_FAMILIES,
        ("learner", "x86_64"): ImageFamily(
            "a deep learning image", "/aws/service/deeplearning/absent", "Deep Learning AMI Amazon Linux*"
        ),
    }
    image = AmiResolver(aws, families=families).resolve("learner", "x86_64")
    described = moto.ec2.describe_images(ImageIds=[image])["Images"][0]
    assert described["Name"].startswith("Deep Learning AMI Amazon Linux") and described["Architecture"] == "x86_64"


def test_no_gpu_image_names_the_override(aws):
    with pytest.raises(AmiNotFoundError, match="pass --ami-learner"):
        AmiResolver(aws).resolve("learner", "arm64")


def test_overrides_are_checked_for_existence_and_architecture(aws, moto, memory_ami):
    with pytest.raises(AmiNotFoundError, match="is x86_64, but this plan's memory machine is arm64"):
        AmiResolver(aws, {"memory": memory_ami["x86_64"]}).resolve("memory", "arm64")
    with pytest.raises(AmiNotFoundError, match="does not exist"):
        AmiResolver(aws, {"learner": "ami-0000000000000dead"}).resolve("learner", "x86_64")


def test_resolved_images_are_cached_per_run(aws, moto, memory_ami):
    moto.faults.on("DescribeImages", lambda p: None)
    resolver = AmiResolver(aws, {"learner": memory_ami["x86_64"]})
    assert {resolver.resolve("learner", "x86_64") for _ in range(3)} == {memory_ami["x86_64"]}
    assert moto.faults.calls["DescribeImages"] == 1


def test_root_volume_is_the_images_root_device_and_size(aws, moto, memory_ami):
    image = moto.ec2.describe_images(ImageIds=[memory_ami["arm64"]])["Images"][0]
    root = AmiResolver(aws).root_volume(memory_ami["arm64"])
    assert root.device_name == image["RootDeviceName"] == "/dev/xvda"
    assert root.size_gb == image["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] and root.volume_type == "gp3"


def test_images_are_described_once_per_image(aws, moto, memory_ami):
    """An override is described once for its check and its root device; an SSM image once for its root device."""
    moto.faults.on("DescribeImages", lambda p: None)
    resolver = AmiResolver(aws, {"learner": memory_ami["x86_64"]})
    for _ in range(3):
        resolver.root_volume(resolver.resolve("learner", "x86_64"))
        resolver.root_volume(resolver.resolve("memory", "arm64"))
    assert moto.faults.calls["DescribeImages"] == 2


def test_an_image_without_an_ebs_root_is_refused(aws, moto):
    """An instance-store image's root disk is no EBS volume, so it cannot be encrypted (moto has none)."""
    image = (
        f'<DescribeImagesResponse xmlns="{NS}"><requestId>t</requestId><imagesSet><item>'
        "<imageId>ami-0000000000000cafe</imageId><architecture>x86_64</architecture>"
        "<rootDeviceType>instance-store</rootDeviceType><rootDeviceName>/dev/sda1</rootDeviceName>"
        "<blockDeviceMapping/></item></imagesSet></DescribeImagesResponse>"
    )
    moto.faults.on("DescribeImages", lambda p: ec2_response(200, image))
    with pytest.raises(AmiNotFoundError, match="no EBS root volume"):
        AmiResolver(aws).root_volume("ami-0000000000000cafe")
