"""What a testbed is asked to be (``TestbedSpec``) and what it is made of (``TestbedState``,
schema ``memorybridge.testbed`` v1): the testbed's state file, embedded in every run it records.

Every name derives from the testbed's name (``mbtb-3fa2c1`` gives the namespaces
``mbtb-3fa2c1-sw``, ``-l0``, ``-m0``, the blkio group ``mbtb-3fa2c1-m0`` and the learner's
memory group ``mbtb-3fa2c1-l0``), so names never collide with another run's.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import Field, field_validator

from contracts.kinds import formerly
from foundation.errors import UsageError
from foundation.models import StrictModel

TESTBED_KIND: Final = "memorybridge.testbed"
OLDER_TESTBED_KIND: Final = "remotegnn.testbed"  # read as TESTBED_KIND (contracts.kinds)
PREFIX = "mbtb"
PREFIX_PATTERN = r"^[a-z][a-z0-9]{0,7}$"
NAME_PATTERN = r"^[a-z][a-z0-9]{0,7}-[a-z0-9]{1,12}$"
MAX_MEMORY_HOSTS = 8
MAX_LEARNER_HOSTS = 8  # l<i> is addressed .2+i, below the memory hosts' .10


class TestbedSpec(StrictModel):
    """What `up` is asked for. Field names are the CLI's flags (--link-gbit ...), so a validation
    error names the flag to fix."""

    name: str = Field(description="PREFIX-ID; every kernel object's name starts with it")
    memory_hosts: int = Field(1, ge=1, le=MAX_MEMORY_HOSTS)
    learner_hosts: int = Field(
        1, ge=1, le=MAX_LEARNER_HOSTS, description="learner machines side by side (l0 starts the jobs), each alike"
    )
    link_gbit: float = Field(1.0, gt=0, le=100, description="each host's NIC, each direction (tbf rate)")
    learner_gbit: float | None = Field(None, gt=0, le=100, description="each learner's NIC, if it differs")
    flow_gbit: float | None = Field(
        None,
        gt=0,
        le=100,
        description="the most one TCP flow a host sends carries, as AWS caps each flow (10 Gbit/s in a cluster "
        "placement group); default: no per-flow cap",
    )
    subnet: IPv4Network = IPv4Network("10.210.0.0/24")
    dataset: Path | None = Field(None, description="a dataset on the volume the memory hosts' reads are throttled on")
    volume_mbps: float = Field(125.0, gt=0, description="read MB/s (10^6 bytes) of each memory host's volume")
    volume_iops: int = Field(3000, gt=0, description="read I/Os per second of each memory host's volume")
    learner_ram_gib: float | None = Field(
        None,
        gt=0,
        description="each learner host's RAM: a memory cgroup caps what its processes hold (page cache included), "
        "so a learner cache on auto is sized to it as on a machine of its own (default: no cap)",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not re.fullmatch(NAME_PATTERN, value):
            raise ValueError(
                f"{value!r} is not PREFIX-ID: 1-8 lowercase letters or digits starting with a letter, "
                "a dash, and 1-12 lowercase letters or digits (e.g. mbtb-exp1)"
            )
        return value

    @field_validator("subnet")
    @classmethod
    def _private_24(cls, value: IPv4Network) -> IPv4Network:
        if value.prefixlen != 24 or not value.is_private:
            raise ValueError(f"{value} is not a private /24; use one such as 10.210.0.0/24")
        return value


class Host(StrictModel):
    """One emulated machine: a namespace with one veth to the switch, tbf-limited both ways."""

    name: str = Field(description="l0, l1, ... (learner hosts; l0 starts the jobs) or m0, m1, ... (memory hosts)")
    role: Literal["learner", "memory"]
    namespace: str
    address: IPv4Address
    gbit: float
    port: str = Field(description="the veth's switch end: its egress is what the host downloads")
    cgroup: Path | None = Field(None, description="the blkio group a memory host's processes run in")
    loop: Path | None = Field(
        None,
        description="a memory host's own read-only loop device of the volume's image (``Volume.image``), mounted "
        "at the image's mount point in each of the host's calls",
    )
    memory_cgroup: Path | None = Field(None, description="the memory group capping a learner host's RAM")

    @property
    def groups(self) -> list[Path]:
        """Every cgroup the host's processes run in."""
        return [g for g in (self.cgroup, self.memory_cgroup) if g is not None]


class Volume(StrictModel):
    """The emulated cloud volume: read limits on the block device holding the dataset.

    Where the dataset lies in a filesystem image (a read-only mount of a loop device), each memory
    host reads it through a loop device of its own, with the limits on that device: a host then
    has its own page cache, as each memory machine has its own volume and RAM. Otherwise the
    hosts share the disk and this machine's page cache (a page one host read, another finds cached).
    """

    dataset: Path
    device: str = Field(description="MAJ:MIN of the whole disk under the dataset (blkio throttles it without an image)")
    mb_per_s: float
    iops: int
    image: Path | None = Field(None, description="the filesystem image holding the dataset, if it lies in one")
    mountpoint: Path | None = Field(None, description="where the image is mounted, here and on every memory host")


class TestbedState(StrictModel):
    """The state file (``STATE_DIR/NAME/state.json``), written before anything is created
    (status ``creating``) and again when everything is (``ready``). A state written under the
    schema's former name, ``remotegnn.testbed``, still loads (and so do the runs embedding it)."""

    kind: Annotated[Literal["memorybridge.testbed"], formerly(OLDER_TESTBED_KIND, TESTBED_KIND)] = TESTBED_KIND
    version: Literal[1] = 1
    name: str = Field(pattern=NAME_PATTERN)
    spec: TestbedSpec
    switch: str = Field(description="the namespace holding the bridge every host's veth joins")
    hosts: list[Host]
    volume: Volume | None
    status: Literal["creating", "ready"] = "creating"
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def learner(self) -> Host:
        """The first learner host, l0: jobs start there, as on the cloud's first learning machine."""
        return self.learners[0]

    @property
    def learners(self) -> list[Host]:
        return [h for h in self.hosts if h.role == "learner"]

    @property
    def memory(self) -> list[Host]:
        return [h for h in self.hosts if h.role == "memory"]

    @property
    def namespaces(self) -> list[str]:
        return [self.switch] + [h.namespace for h in self.hosts]

    @property
    def groups(self) -> list[Path]:
        """Every cgroup of every host."""
        return [g for h in self.hosts for g in h.groups]

    @property
    def loops(self) -> list[Path]:
        """Every memory host's loop device."""
        return [h.loop for h in self.hosts if h.loop is not None]

    def host(self, key: str) -> Host:
        """A host by name (m0) or address (10.210.0.10)."""
        for host in self.hosts:
            if key in (host.name, str(host.address)):
                return host
        known = ", ".join(f"{h.name} ({h.address})" for h in self.hosts)
        raise UsageError(f"testbed {self.name} has no host {key!r}; its hosts are {known}")
