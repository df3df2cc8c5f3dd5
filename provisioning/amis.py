"""Machine images per role and architecture.

The learner gets AWS's Deep Learning Base GPU image (NVIDIA driver and CUDA installed) and the
memory machines plain Amazon Linux 2023; both are Amazon Linux 2023, so one user-data script and
one SSH user (``ec2-user``) serve both, for x86_64 and arm64 alike. An image is resolved, in order:

1. ``--ami-learner`` / ``--ami-memory`` when given (checked to exist and match the architecture);
2. the AWS-published SSM public parameter (AWS keeps it pointing at the newest image);
3. ``describe_images`` owned by Amazon with the image family's name pattern, newest first (for
   accounts or regions where the parameter is missing or SSM is not permitted).

Resolved ids are cached per run: every plan of a failover sequence reuses them. So are the
described images, whose root device (name and snapshot size) ``run_instances`` must name to
launch the root volume encrypted: an image without an EBS root cannot be, and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.cluster import Arch, Role
from provisioning.aws import Aws
from provisioning.errors import AmiNotFoundError, AwsError
from provisioning.models import RootVolume


@dataclass(frozen=True)
class ImageFamily:
    description: str
    ssm_parameter: str
    name_pattern: str
    owner: str = "amazon"


DLAMI = "/aws/service/deeplearning/ami/{arch}/base-oss-nvidia-driver-gpu-amazon-linux-2023/latest/ami-id"
AL2023 = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-{arch}"

IMAGE_FAMILIES: dict[tuple[Role, Arch], ImageFamily] = {
    ("learner", "x86_64"): ImageFamily(
        "AWS Deep Learning Base GPU AMI (Amazon Linux 2023)",
        DLAMI.format(arch="x86_64"),
        "Deep Learning Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023) *",
    ),
    ("learner", "arm64"): ImageFamily(
        "AWS Deep Learning ARM64 Base GPU AMI (Amazon Linux 2023)",
        DLAMI.format(arch="arm64"),
        "Deep Learning ARM64 Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023) *",
    ),
    ("memory", "x86_64"): ImageFamily("Amazon Linux 2023", AL2023.format(arch="x86_64"), "al2023-ami-2023.*-x86_64"),
    ("memory", "arm64"): ImageFamily("Amazon Linux 2023", AL2023.format(arch="arm64"), "al2023-ami-2023.*-arm64"),
}

# SSM answers that mean "look elsewhere", not "stop": the parameter is absent here, or SSM is not allowed.
SSM_FALLBACK_CODES = frozenset({"ParameterNotFound", "AccessDeniedException", "UnrecognizedClientException"})


class AmiResolver:
    def __init__(
        self,
        aws: Aws,
        overrides: dict[Role, str] | None = None,
        families: dict[tuple[Role, Arch], ImageFamily] = IMAGE_FAMILIES,
    ):
        self.aws, self.overrides, self.families = aws, overrides or {}, families
        self._cache: dict[tuple[Role, Arch], str] = {}
        self._images: dict[str, dict] = {}  # image id -> its describe_images record

    def resolve(self, role: Role, arch: Arch) -> str:
        key = (role, arch)
        if key not in self._cache:
            override = self.overrides.get(role)
            self._cache[key] = self._check(override, role, arch) if override else self._lookup(role, arch)
        return self._cache[key]

    def root_volume(self, image_id: str) -> RootVolume:
        """The image's root device and size, which the launch names to encrypt the root volume."""
        image = self._described(image_id)
        if image is None:
            raise AmiNotFoundError(f"image {image_id} does not exist in {self.aws.region}")
        device = image.get("RootDeviceName")
        ebs = next((m["Ebs"] for m in image.get("BlockDeviceMappings", []) if m.get("DeviceName") == device), None)
        if ebs is None or "VolumeSize" not in ebs:
            raise AmiNotFoundError(f"image {image_id} has no EBS root volume, so its root disk cannot be encrypted")
        return RootVolume(device_name=device, size_gb=ebs["VolumeSize"])

    def _described(self, image_id: str) -> dict | None:
        if image_id not in self._images:
            found = self.aws.call("describe_images", Filters=[{"Name": "image-id", "Values": [image_id]}])["Images"]
            if not found:
                return None
            self._images[image_id] = found[0]
        return self._images[image_id]

    def _check(self, image_id: str, role: Role, arch: Arch) -> str:
        image = self._described(image_id)
        if image is None:
            raise AmiNotFoundError(f"--ami-{role} {image_id} does not exist in {self.aws.region}")
        if image.get("Architecture") != arch:
            raise AmiNotFoundError(
                f"--ami-{role} {image_id} is {image.get('Architecture')}, but this plan's {role} machine is {arch}"
            )
        return image_id

    def _lookup(self, role: Role, arch: Arch) -> str:
        family = self.families[(role, arch)]
        try:
            return self.aws.call("get_parameter", service="ssm", Name=family.ssm_parameter)["Parameter"]["Value"]
        except AwsError as exc:
            if exc.code not in SSM_FALLBACK_CODES:
                raise
        images = self.aws.call(
            "describe_images",
            Owners=[family.owner],
            Filters=[
                {"Name": "name", "Values": [family.name_pattern]},
                {"Name": "architecture", "Values": [arch]},
                {"Name": "state", "Values": ["available"]},
            ],
        )["Images"]
        if not images:
            raise AmiNotFoundError(
                f"no {family.description} image for {arch} in {self.aws.region} (neither SSM "
                f"{family.ssm_parameter} nor images named {family.name_pattern!r}); "
                f"pass --ami-{role} AMI_ID"
            )
        newest = max(images, key=lambda i: i.get("CreationDate", ""))
        self._images[newest["ImageId"]] = newest
        return newest["ImageId"]
