"""Datasets on a real disk (and on tmpfs where the machine has one) for the volume tests."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from remotegnn.store import DatasetWriter, GraphDataset
from remotegnn.volume import detect_emulation

# Fast enough that correctness tests do not wait on the throttle, slow enough to engage it.
FAST = {"mb_per_s": 100_000.0, "iops": 1_000_000.0}


def make_dataset(path: Path, num_nodes: int, dim: int, dtype: str = "float32", seed: int = 0) -> GraphDataset:
    """A dataset with random features (every byte pattern is a fair test of the gather)."""
    with DatasetWriter(path, name=path.name) as writer:
        writer.write_graph(np.array([0]), np.array([num_nodes - 1]), num_nodes)
        features = writer.features(dim, dtype)
        features[:] = np.random.default_rng(seed).standard_normal((num_nodes, dim)).astype(dtype)
        del features
        writer.commit(source="volume test")
    return GraphDataset.open(path)


@pytest.fixture(scope="session")
def disk_dir(tmp_path_factory) -> Path:
    """A temp directory whose filesystem serves O_DIRECT reads (a real block device)."""
    path = tmp_path_factory.mktemp("volume")
    probe = path / "probe"
    probe.write_bytes(b"\0" * 8192)
    support = detect_emulation(probe)
    if not support.o_direct.available:
        pytest.skip(f"the temp directory {path} is not on a real disk: {support.o_direct.reason}")
    return path


@pytest.fixture(scope="session")
def ram_dir():
    """A temp directory on tmpfs (/dev/shm), where O_DIRECT cannot reach a disk."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm on this machine")
    path = Path(tempfile.mkdtemp(prefix="volume-test-", dir=shm))
    probe = path / "probe"
    probe.write_bytes(b"\0" * 4096)
    if detect_emulation(probe).filesystem != "tmpfs":
        shutil.rmtree(path)
        pytest.skip("/dev/shm is not tmpfs here")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def narrow(disk_dir) -> GraphDataset:
    """12-byte rows (3 x float32): many rows per page, some straddling page boundaries."""
    return make_dataset(disk_dir / "narrow", 20_000, 3)


@pytest.fixture(scope="session")
def big(disk_dir) -> GraphDataset:
    """8 MiB of 512-byte rows (128 x float32, papers100M's row size), for throttling."""
    return make_dataset(disk_dir / "big", 16_384, 128, seed=1)
