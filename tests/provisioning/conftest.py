"""Fixtures for the provisioning tests: one moto server per session, shared by every test.

AWS is reached only through real boto3 clients over HTTP: ``AWS_ENDPOINT_URL`` points boto3's
default session (which the project's CLI and library both use) at a ``ThreadedMotoServer`` on
127.0.0.1 (free port, instance-type validation on, dummy credentials, no ~/.aws). Each test gets a
fresh default session whose event hooks carry the placement-group stand-in and any faults the
test registers (``moto.faults``). After each test, moto and the stand-in must hold no resource
tagged ``memorybridge:cluster`` (terminated instances aside): every test cleans up after itself,
and a leak fails the test that caused it (and resets moto, so the next test starts clean).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

from contracts.plan import Constraints, Filters, PlanRequest, Recommendation
from provisioning.aws import Aws, Timing
from provisioning.tags import CLUSTER
from tests.moto_server import running_moto
from tests.provisioning.ec2fakes import Faults, PlacementGroups

REGION = "us-east-1"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing-key-id",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-DO-NOT-PRINT",
    "AWS_SESSION_TOKEN": "testing-session-token",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


@pytest.fixture(scope="session")
def moto_server():
    """moto in server mode on 127.0.0.1 (free port), instance-type validation on."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MOTO_EC2_ENABLE_INSTANCE_TYPE_VALIDATION", "true")  # read when moto is imported
        import moto.settings

        # Another test module may have imported moto before this environment was set.
        mp.setattr(moto.settings, "EC2_ENABLE_INSTANCE_TYPE_VALIDATION", True)
        # Its request log goes to the stderr of the moment, which a CLI test captures as the command's own.
        mp.setattr(logging.getLogger("werkzeug"), "disabled", True)
        with running_moto() as url:
            yield url


@pytest.fixture(scope="session")
def botocore_loader():
    """One botocore data loader for every test's fresh session: parsing EC2's model once, not per test."""
    import botocore.loaders

    return botocore.loaders.create_loader()


@pytest.fixture(scope="session")
def moto_ec2(moto_server):
    """A plain EC2 client (no faults, no stand-in) for looking at moto directly."""
    return plain_client(moto_server)


@dataclass
class Moto:
    url: str
    placement_groups: PlacementGroups
    faults: Faults
    state_dir: Path
    ec2: object  # a plain client: what moto holds, unaffected by the test's faults


def unused_endpoint() -> str:
    """The URL of a port that was free a moment ago: nothing listens there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def plain_client(url: str, service: str = "ec2", region: str = REGION):
    """A client of its own session (no faults, no stand-in) for looking at moto directly."""
    return boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing").client(
        service, endpoint_url=url, region_name=region
    )


@pytest.fixture
def moto(moto_server, moto_ec2, botocore_loader, monkeypatch, tmp_path) -> Moto:
    for key, value in AWS_ENV.items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("AWS_ENDPOINT_URL") or k == "AWS_PROFILE"]:
        monkeypatch.delenv(key)
    state_dir = tmp_path / "clusters"
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("MEMORYBRIDGE_STATE_DIR", str(state_dir))
    monkeypatch.setenv("MEMORYBRIDGE_AWS_POLL_SECONDS", "0.01")
    monkeypatch.setenv("MEMORYBRIDGE_AWS_WAIT_SECONDS", "20")
    monkeypatch.setenv("MEMORYBRIDGE_AWS_BACKOFF_SECONDS", "0.001")
    import botocore.session

    core = botocore.session.get_session()
    core.register_component("data_loader", botocore_loader)
    boto3.setup_default_session(botocore_session=core)
    placement_groups = PlacementGroups()
    placement_groups.install(boto3.DEFAULT_SESSION.events)
    env = Moto(moto_server, placement_groups, Faults(boto3.DEFAULT_SESSION.events), state_dir, moto_ec2)
    yield env
    boto3.DEFAULT_SESSION = None
    leaks = leftovers(env)
    if leaks:  # start the next test clean (a reset costs a region's set-up, so only then)
        reset_moto(moto_server)
    assert not leaks, f"resources tagged {CLUSTER} left in moto: {leaks}"


def reset_moto(url: str) -> None:
    """Forget everything the server holds, terminated instances (and their tags) included."""
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10)


def leftovers(env: Moto) -> list[str]:
    tagged = [{"Name": "tag-key", "Values": [CLUSTER]}]
    out = [f"placement-group {name}" for name in env.placement_groups.groups]
    ec2 = env.ec2
    out += [
        f"instance {i['InstanceId']}"
        for r in ec2.describe_instances(Filters=tagged)["Reservations"]
        for i in r["Instances"]
        if i["State"]["Name"] != "terminated"
    ]
    out += [f"volume {v['VolumeId']}" for v in ec2.describe_volumes(Filters=tagged)["Volumes"]]
    out += [f"security-group {g['GroupId']}" for g in ec2.describe_security_groups(Filters=tagged)["SecurityGroups"]]
    out += [f"key-pair {k['KeyName']}" for k in ec2.describe_key_pairs(Filters=tagged)["KeyPairs"]]
    return out


@pytest.fixture
def aws(moto) -> Aws:
    return Aws.connect(REGION, Timing.from_env())


@pytest.fixture(scope="session")
def two_level_plan() -> Recommendation:
    """A real plan: g4dn.4xlarge + 2x r6in.2xlarge, with ranked alternatives (some arm64 memory machines).

    Without a learner cache: with one, the learner holds most rows and a single memory machine suffices.
    """
    from planner.solver.recommend import recommend

    rec = recommend(
        PlanRequest(
            dataset="papers100M",
            workload={"learner_cache": "none"},
            constraints=Constraints(budget_usd=50),
            filters=Filters(max_memory_gib=64),
        )
    )
    assert rec.chosen and rec.chosen.memory and rec.chosen.memory.count == 2 and len(rec.alternatives) >= 3
    return rec


@pytest.fixture(scope="session")
def memory_ami(moto_server) -> dict[str, str]:
    """Amazon Linux 2023 image ids per architecture, as moto's copy of the SSM public parameters has them."""
    ssm = plain_client(moto_server, "ssm")
    return {
        arch: ssm.get_parameter(Name=f"/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-{arch}")[
            "Parameter"
        ]["Value"]
        for arch in ("x86_64", "arm64")
    }


@pytest.fixture
def public_key(tmp_path) -> Path:
    """A fresh ed25519 key pair on disk; the public half's path."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    private = ed25519.Ed25519PrivateKey.generate()
    path = tmp_path / "id_ed25519"
    path.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
    )
    pub = path.with_suffix(".pub")
    pub.write_bytes(
        private.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        + b" test@memorybridge\n"
    )
    return pub


REQUIRES = ("numpy>=1.26", 'torch>=2.4; extra == "pyg"', 'mpi4py>=4.1; extra == "mpi"', "numba>=0.60")


def make_wheel(directory: Path, version: str = "0.1.0", requires: tuple[str, ...] = REQUIRES) -> Path:
    """A small wheel of memorybridge: the METADATA a real one has (name, version, requirements)."""
    import zipfile

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"memorybridge-{version}-py3-none-any.whl"
    info = f"memorybridge-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", "Name: memorybridge", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", "\n".join(lines) + "\n\nMemoryBridge.\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr("memorybridge_marker.py", f"VERSION = {version!r}\n")
    return path


@pytest.fixture
def wheel_file(tmp_path) -> Path:
    return make_wheel(tmp_path / "dist")


@pytest.fixture
def make_options(moto, public_key, memory_ami, wheel_file):
    """UpOptions for cluster 'c1' (SSH from one /32; the learner on moto's AL2023 image, as moto has no DLAMI),
    shipping ``wheel_file`` as `up` does."""
    from provisioning import statefile
    from provisioning.bringup import UpOptions
    from provisioning.wheel import ship

    key_text = public_key.read_text().strip()
    shipped, _, requires = ship(wheel_file, statefile.wheel_dir(moto.state_dir, "c1"))

    def make(**overrides) -> UpOptions:
        values = dict(
            cluster="c1",
            public_key=key_text,
            public_key_file=public_key,
            state_dir=moto.state_dir,
            ssh_cidrs=["203.0.113.7/32"],
            ami_overrides={"learner": memory_ami["x86_64"]},
            wheel=shipped,
            requires=requires,
        )
        return UpOptions(**{**values, **overrides})

    return make


def live_instances(moto: Moto, cluster: str = "c1") -> list[dict]:
    reservations = moto.ec2.describe_instances(
        Filters=[
            {"Name": f"tag:{CLUSTER}", "Values": [cluster]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
    )["Reservations"]
    return [i for r in reservations for i in r["Instances"]]


def signal_this_process(sig: signal.Signals) -> None:
    """`kill -SIG` this process - the pytest worker - as `timeout`, systemd or a closed terminal
    signal `provision run`, once the code under test handles ``sig``. Python's default for SIGTERM
    and SIGHUP would end the worker, which xdist reports as a crashed worker, not as this test
    failing, so without a handler the test fails here instead."""
    if signal.getsignal(sig) in (signal.SIG_DFL, signal.SIG_IGN, None):
        pytest.fail(f"nothing handles {sig.name} here: sending it would have ended this process, not the command")
    os.kill(os.getpid(), sig)
