"""`fullgraph partition` and `fullgraph slice` stopped mid-write by SIGINT, SIGTERM or SIGHUP, or
by a full disk, leave nothing beside their destination and say so."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interrupting import SIGNALS, interrupt_mid_write, medium_dataset

pytestmark = pytest.mark.slow  # the dataset they read takes seconds to write
SMALL_DISK = "256k"  # far smaller than the parts of the medium dataset


@pytest.fixture(scope="module")
def medium(tmp_path_factory) -> Path:
    return medium_dataset(tmp_path_factory.mktemp("medium"))


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_partition_stopped_by_each_signal_leaves_nothing_and_says_which(medium, tmp_path, sig):
    dst = tmp_path / "parts"
    interrupt_mid_write(sig, "fullgraph", "partition", medium, dst, "--parts", 4, dst=dst)


def test_slice_stopped_mid_write_leaves_nothing(medium, tmp_path):
    dst = tmp_path / "slices"
    interrupt_mid_write(signal.SIGTERM, "fullgraph", "slice", medium, dst, "--parts", 4, dst=dst)


def test_a_full_disk_ends_partition_with_one_line_and_leaves_nothing(medium, small_disk):
    disk = small_disk(SMALL_DISK)
    argv = [sys.executable, "-m", "fullgraph.cli.main", "partition", str(medium), str(disk / "parts")]
    done = subprocess.run([*argv, "--parts", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "small-disk is full (No space left on device)" in line
    assert list(disk.iterdir()) == []
