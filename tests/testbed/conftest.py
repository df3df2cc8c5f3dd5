"""Real testbeds for the tests: namespaces, tc, cgroups and mpiexec, never mocks.

Every testbed here is named with this session's own prefix, so tests never touch another run's
testbeds, and whatever a failed test left is swept by prefix at the end of the session. Tests
skip, with the reason, where the machine cannot build a testbed.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from contracts.testbed import TestbedSpec, TestbedState
from remotegnn.volume import detect_emulation
from testbed import lifecycle, system
from testbed import state as st

PROBES = Path(__file__).with_name("probes.py")
TESTBED = Path(sys.executable).parent / "testbed"


@pytest.fixture(scope="session")
def root_support() -> system.Support:
    found = system.detect()
    if not found.root.available:
        pytest.skip(f"the testbed needs root: {found.root.reason}")
    if not found.network.available:
        pytest.skip(f"the testbed's network cannot be built here: {found.network.reason}")
    return found


@pytest.fixture(scope="session")
def mpi(root_support) -> None:
    if not root_support.mpi.available:
        pytest.skip(f"MPI jobs need Open MPI: {root_support.mpi.reason}")
    try:
        import mpi4py  # noqa: F401  (only whether it imports)
    except ImportError as exc:
        pytest.skip(f"MPI jobs need mpi4py: {exc}")


@pytest.fixture(scope="session")
def prefix(root_support, tmp_path_factory):
    prefix = f"t{secrets.token_hex(3)}"
    yield prefix
    lifecycle.down_all(tmp_path_factory.mktemp("sweep"), prefix)


@pytest.fixture
def state_dir(tmp_path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def make_testbed(prefix, state_dir):
    """``make_testbed(link_gbit=1, ...)`` runs `up` with this session's prefix; each is removed after the test."""
    made = []

    def make(**fields) -> TestbedState:
        bed = lifecycle.up(TestbedSpec(name=st.new_name(prefix), **fields), state_dir)
        made.append(bed.name)
        return bed

    yield make
    for name in made:
        lifecycle.down(state_dir, name)


@pytest.fixture(scope="session")
def volume(tmp_path_factory) -> Path:
    """A 'dataset' on this machine's disk: one 48 MB features.npy (up needs nothing more)."""
    path = tmp_path_factory.mktemp("volume")
    features = path / "features.npy"
    np.save(features, np.random.default_rng(0).integers(0, 255, (48_000, 1000), dtype=np.uint8))
    found = detect_emulation(features)
    if not found.blkio.available:
        pytest.skip(f"the volume cannot be throttled here: {found.blkio.reason}")
    return path


@contextlib.contextmanager
def mounted_image(directory: Path, size_mb: int, files: dict[str, np.ndarray], read_only: bool = True):
    """An ext4 image of ``size_mb`` MB holding ``files`` (saved with numpy), mounted from a loop
    device at DIRECTORY/mnt (read-only unless asked), as a dataset on a volume image is; its mount
    point while it lasts, then unmounted and detached."""
    for tool in ("mkfs.ext4", "losetup"):
        if shutil.which(tool) is None:
            pytest.skip(f"an image volume needs {tool} (Debian's e2fsprogs and util-linux)")
    image, mountpoint = directory / "volume.img", directory / "mnt"
    with open(image, "wb") as f:
        f.truncate(size_mb * 10**6)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    mountpoint.mkdir()
    loop = subprocess.run(["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True)
    device = loop.stdout.strip()
    try:
        subprocess.run(["mount", device, str(mountpoint)], check=True)
        try:
            for name, array in files.items():
                np.save(mountpoint / name, array)
            if read_only:
                subprocess.run(["mount", "-o", "remount,ro", str(mountpoint)], check=True)
            yield mountpoint
        finally:
            subprocess.run(["umount", str(mountpoint)], check=True)
    finally:
        subprocess.run(["losetup", "--detach", device], check=True)


@pytest.fixture(scope="session")
def image_volume(root_support, tmp_path_factory) -> Iterator[Path]:
    """The 'dataset' of ``volume`` (one 48 MB features.npy) in a filesystem image mounted read-only:
    each memory host then reads it through a loop device of its own."""
    features = np.random.default_rng(0).integers(0, 255, (48_000, 1000), dtype=np.uint8)
    with mounted_image(tmp_path_factory.mktemp("image"), 64, {"features.npy": features}) as mountpoint:
        yield mountpoint


def probe_argv(*args: str) -> list[str]:
    return [sys.executable, str(PROBES), *args]


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(TESTBED), *map(str, args)], capture_output=True, text=True, timeout=timeout)
