"""Machine images per role and architecture.

The learner gets AWS's Deep Learning Base GPU image (NVIDIA driver and CUDA installed) and the
memory machines plain Amazon Linux 2023; both are Amazon Linux 2023, so one user-data script and
one SSH user (``ec2-user``) serve both, for x86_64 and arm64 alike. An image is resolved, in order:

1. ``--ami-learner`` / ``--ami-memory`` when given (checked to exist and match the architecture);
2. the AWS-published SSM public parameter (AWS keeps it pointing at the newest image);
3. ``describe_images`` owned by Amazon with the image family's name pattern, newest first (for
   accounts or regions where the parameter is missing or SSM is not permitted).

Resolved ids are cached per run: every plan of a failover sequence reuses them.
"""

from __future__ import annotations

from dataclasses import dataclass

from provisioning.aws import Aws
from provisioning.errors import AmiNotFoundError, AwsError
from provisioning.models import Arch, Role


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

    def resolve(self, role: Role, arch: Arch) -> str:
        key = (role, arch)
        if key not in self._cache:
            override = self.overrides.get(role)
            self._cache[key] = self._check(override, role, arch) if override else self._lookup(role, arch)
        return self._cache[key]

    def _check(self, image_id: str, role: Role, arch: Arch) -> str:
        images = self.aws.call("describe_images", Filters=[{"Name": "image-id", "Values": [image_id]}])["Images"]
        if not images:
            raise AmiNotFoundError(f"--ami-{role} {image_id} does not exist in {self.aws.region}")
        if images[0].get("Architecture") != arch:
            raise AmiNotFoundError(
                f"--ami-{role} {image_id} is {images[0].get('Architecture')}, but this plan's {role} machine is {arch}"
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
        return max(images, key=lambda i: i.get("CreationDate", ""))["ImageId"]
