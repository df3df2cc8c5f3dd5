"""`fullgraph partition` and `fullgraph slice` stopped mid-write by SIGINT, SIGTERM or SIGHUP leave
nothing beside their destination and say so."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.interrupting import SIGNALS, interrupt_mid_write, medium_dataset

pytestmark = pytest.mark.slow  # the dataset they read takes seconds to write


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
