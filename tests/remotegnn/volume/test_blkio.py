"""The kernel emulation: a blkio cgroup around one reader thread, never left behind.

Skipped where blkio is unavailable (not root, no cgroup v1 blkio, no block device) and, for the
tests that need the throttle itself, where the volume's probe found the kernel not throttling.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from remotegnn.volume import FeatureVolume, VolumeLimits, detect_emulation
from remotegnn.volume.blkio import PREFIX
from remotegnn.volume.limits import PAGE
from remotegnn.volume.volume import _PROBES
from tests.remotegnn.volume.conftest import FAST

pytestmark = pytest.mark.root  # cgroup v1 blkio groups need root

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def support(big):
    found = detect_emulation(big.features_path)
    if not found.blkio.available:
        pytest.skip(f"blkio emulation unavailable here: {found.blkio.reason}")
    return found


def open_blkio(dataset, limits=VolumeLimits(**FAST)) -> FeatureVolume:
    volume = FeatureVolume(dataset, limits, "blkio")
    if volume.emulation != "blkio":
        volume.close()
        pytest.skip(f"the kernel throttle is not effective here: {volume.emulation_note}")
    return volume


def our_groups(support) -> set[str]:
    """This process's groups only: another test run on the machine may hold its own."""
    return {p.name for p in Path(support.cgroup_root).glob(f"{PREFIX}{os.getpid()}-*")}


def reader_threads(group: Path) -> list[str]:
    """The group's threads, each checked to be one of the volume's readers (by its name)."""
    tasks = (group / "tasks").read_text().split()
    readers = {str(t.native_id) for t in threading.enumerate() if t.name.startswith("volume-blkio")}
    assert set(tasks) <= readers
    return tasks


def test_only_the_reader_threads_are_throttled_and_the_group_goes_on_close(big, support):
    before = our_groups(support)
    # One-page requests: a longer one that crosses an extent boundary of a fragmented file
    # reaches the device as two I/Os (as it would on EBS), which the plan cannot see.
    with open_blkio(big, VolumeLimits(**FAST, max_request_bytes=PAGE)) as volume:
        group = volume.cgroup
        assert len(reader_threads(group)) == 1  # started on demand: the probe's
        assert "probe" in volume.emulation_note
        serviced = volume._reader.group.reads_serviced()
        nodes = np.unique(np.random.default_rng(5).integers(0, len(big.features), 2000))
        out = np.empty((len(nodes), 128), dtype=np.float32)
        volume.read_rows(nodes, out)
        np.testing.assert_array_equal(out, big.features[nodes])
        assert 1 < len(reader_threads(group)) <= volume.queue_depth  # requests in flight at once, nothing else
        # Each request reached the device as one I/O: the kernel counts what the plan counts,
        # plus now and then a read the filesystem makes on our behalf (metadata, e.g. extents).
        extra = volume._reader.group.reads_serviced() - serviced - volume.stats.requests
        assert 0 <= extra <= 4
    assert not group.exists()
    assert our_groups(support) == before


def test_group_goes_after_an_exception(big, support):
    with pytest.raises(RuntimeError, match="boom"), open_blkio(big) as volume:
        group = volume.cgroup
        raise RuntimeError("boom")
    assert not group.exists()


def test_group_goes_when_the_volume_is_collected(big, support):
    volume = open_blkio(big)
    group = volume.cgroup
    del volume
    gc.collect()
    assert not group.exists()


def test_a_thread_started_from_the_reader_does_not_keep_the_group(big, support):
    """Threads inherit the cgroup of the thread that starts them; close moves ours out."""
    release = threading.Event()
    with open_blkio(big) as volume:
        group = volume.cgroup
        child = volume._reader.run(lambda: threading.Thread(target=release.wait, daemon=True))
        volume._reader.run(child.start)
        assert str(child.native_id) in (group / "tasks").read_text().split()
    assert not group.exists() and child.is_alive()
    release.set()
    child.join()


def test_an_error_in_the_reader_thread_reaches_the_caller(big, support):
    with open_blkio(big) as volume:
        with pytest.raises(ValueError):
            volume._reader.run(int, "not a number")
        out = np.empty((1, 128), dtype=np.float32)
        volume.read_rows(np.array([7]), out)  # the thread survives
        np.testing.assert_array_equal(out[0], big.features[7])


def test_kernel_throttle_holds_a_sustained_read(big, support):
    """4 MiB at 16 MB/s: at least 0.26 s, less the one 100 ms slice blk-throttle grants up front."""
    limits = VolumeLimits(mb_per_s=16, iops=1_000_000)
    with open_blkio(big, limits) as volume:
        out = np.empty((8192, 128), dtype=np.float32)
        start = time.perf_counter()
        volume.read_rows(np.arange(8192), out)
        elapsed = time.perf_counter() - start
        floor = limits.seconds_for(volume.stats.bytes_read, volume.stats.requests)
    assert elapsed >= floor - 0.11
    assert volume.stats.throttled_seconds == 0  # the kernel did it


def test_auto_takes_blkio_only_when_the_probe_shows_bursts_held(big, support):
    with FeatureVolume(big, VolumeLimits(**FAST)) as volume:
        probed = _PROBES.get(support.device)
        assert probed is not None
        assert volume.emulation == ("blkio" if probed.exact else "token-bucket")
        assert probed.describe() in volume.emulation_note


def test_a_killed_process_leaves_a_group_that_the_next_volume_sweeps(big, support):
    script = textwrap.dedent(f"""
        import time
        from remotegnn.store import GraphDataset
        from remotegnn.volume import FeatureVolume, VolumeLimits
        volume = FeatureVolume(GraphDataset.open({str(big.path)!r}), VolumeLimits(), "blkio")
        print(volume.cgroup, flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline().strip()
    finally:
        child.kill()
        child.wait()
    if line == "None":
        pytest.skip("the kernel throttle is not effective here")
    left = Path(line)
    assert left.exists(), "SIGKILL runs no cleanup, so the group stays until swept"
    with open_blkio(big):
        assert not left.exists()
