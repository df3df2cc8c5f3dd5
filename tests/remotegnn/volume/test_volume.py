"""FeatureVolume on a real disk: rows, accounting, input checks and pacing for every emulation
this machine supports (blkio has its own module)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from pydantic import ValidationError

from foundation.errors import UsageError
from remotegnn.volume import EmulationUnavailable, FeatureVolume, VolumeLimits, detect_emulation
from remotegnn.volume.limits import PAGE
from remotegnn.volume.throttle import TOLERANCE_S
from tests.remotegnn.volume.conftest import FAST, make_dataset

USER_SPACE = ["none", "token-bucket", "page-cache"]


def read(volume: FeatureVolume, nodes) -> np.ndarray:
    nodes = np.asarray(nodes, dtype=np.int64)
    out = np.empty((len(nodes), volume.dataset.meta.feature_dim), dtype=volume.dataset.features.dtype)
    volume.read_rows(nodes, out)
    return out


@pytest.fixture(
    scope="module", params=[("float32", 3), ("float16", 37), ("float32", 1500)], ids=["f32x3", "f16x37", "f32x1500"]
)
def dataset(request, disk_dir):
    """12-byte rows (straddling pages), 74-byte fp16 rows, 6,000-byte rows (over a page)."""
    dtype, dim = request.param
    return make_dataset(disk_dir / f"{dtype}x{dim}", 4_000 if dim > 100 else 20_000, dim, dtype)


@pytest.mark.parametrize("emulation", USER_SPACE + ["blkio"])
def test_rows_equal_the_features(dataset, emulation):
    features = dataset.features
    n = len(features)
    rng = np.random.default_rng(3)
    cases = [[0], [n - 1], [0, n - 1], np.unique(rng.integers(0, n, 500)), np.arange(n)]
    if emulation == "blkio" and not (blkio := detect_emulation(dataset.features_path).blkio).available:
        pytest.skip(f"blkio unavailable here: {blkio.reason}")
    with FeatureVolume(dataset, VolumeLimits(**FAST), emulation) as volume:
        if volume.emulation != emulation:
            pytest.skip(volume.emulation_note)
        for nodes in cases:
            np.testing.assert_array_equal(read(volume, nodes), features[nodes])
        assert volume.stats.rows == sum(len(c) for c in cases)


def test_a_small_buffer_or_any_queue_depth_reads_the_same_rows_and_counts(dataset):
    """A buffer far smaller than the request, or requests issued one at a time or many at once,
    still give the rows and the same I/O counts."""
    nodes = np.unique(np.random.default_rng(4).integers(0, len(dataset.features), 3000))
    counts = []
    for buffer_bytes, depth in ((0, 1), (1 << 30, 1), (0, 7), (1 << 30, 32)):
        with FeatureVolume(
            dataset, VolumeLimits(**FAST), "none", buffer_bytes=buffer_bytes, queue_depth=depth
        ) as volume:
            np.testing.assert_array_equal(read(volume, nodes), dataset.features[nodes])
            counts.append((volume.stats.requests, volume.stats.pages, volume.stats.rows))
    assert counts[0] > (1, 1, 1) and len(set(counts)) == 1


def test_empty_request_reads_nothing(narrow):
    with FeatureVolume(narrow, VolumeLimits(**FAST), "token-bucket") as volume:
        volume.read_rows(np.empty(0, dtype=np.int64), np.empty((0, 3), dtype=np.float32))
        assert (volume.stats.calls, volume.stats.requests, volume.stats.bytes_read) == (1, 0, 0)


def test_accounting_on_a_hand_computed_case(narrow):
    """12-byte rows after a 128-byte header (see test_plan): pages 0-2 and 8-11 (a gap of two
    pages merged, 10 MB/s / 1,000 IOPS makes 2 pages cheaper than an I/O), cut into requests
    of 2 pages: 4 I/Os, 7 pages."""
    assert narrow.features_offset == 128
    limits = VolumeLimits(mb_per_s=10, iops=1000, max_request_bytes=2 * PAGE)
    assert limits.merge_gap_pages == 2
    nodes = np.array([0, 330, 1000, 3000, 4000])
    with FeatureVolume(narrow, limits, "none") as volume:
        np.testing.assert_array_equal(read(volume, nodes), narrow.features[nodes])
        stats = volume.stats.snapshot()
    assert (stats.calls, stats.rows, stats.requests, stats.pages, stats.bytes_read) == (1, 5, 4, 7, 7 * PAGE)
    assert stats.throttled_seconds == 0


def test_stats_snapshot_since_and_reset(narrow):
    with FeatureVolume(narrow, VolumeLimits(**FAST), "none") as volume:
        read(volume, [5, 6])
        before = volume.stats.snapshot()
        read(volume, [7])
        delta = volume.stats.since(before)
        assert (delta.calls, delta.rows, delta.requests) == (1, 1, 1)
        assert before.calls == 1  # a snapshot does not move
        volume.stats.reset()
        assert volume.stats.calls == 0 and volume.stats.seconds == 0
        assert set(volume.stats.as_dict()) >= {"bytes_read", "mb_per_s", "iops", "rows_per_s"}


@pytest.mark.parametrize("emulation", ["token-bucket", "page-cache"])
def test_bandwidth_limit_holds(big, emulation):
    """8 MiB at 40 MB/s cannot take less than ~0.21 s (a lower bound the emulation honours)."""
    limits = VolumeLimits(mb_per_s=40, iops=1_000_000)
    with FeatureVolume(big, limits, emulation) as volume:
        start = time.perf_counter()
        read(volume, np.arange(len(big.features)))
        elapsed = time.perf_counter() - start
        stats = volume.stats
    floor = limits.seconds_for(stats.bytes_read, stats.requests)
    assert stats.bytes_read >= 8 << 20 and floor > 0.2
    assert elapsed >= floor - TOLERANCE_S
    assert stats.throttled_seconds > 0
    assert elapsed < 3 * floor + 0.5, "the emulation should not be much slower than its limit"


@pytest.mark.parametrize("depth", [1, 16])
def test_iops_limit_holds_with_any_requests_in_flight(big, depth):
    """300 rows six pages apart are 300 I/Os (a 2-page gap limit keeps them apart): at 2,000
    IOPS at least 0.15 s, while their 1.2 MB would take 0.06 s at 20 MB/s."""
    limits = VolumeLimits(mb_per_s=20, iops=2000)
    nodes = np.arange(300) * 48  # 48 rows of 512 B = 6 pages
    with FeatureVolume(big, limits, "token-bucket", queue_depth=depth) as volume:
        start = time.perf_counter()
        np.testing.assert_array_equal(read(volume, nodes), big.features[nodes])
        elapsed = time.perf_counter() - start
        stats = volume.stats
    assert (stats.requests, stats.pages) == (300, 300)
    assert elapsed >= 300 / 2000 - TOLERANCE_S
    assert elapsed < 3 * 300 / 2000 + 0.5


def test_unpaced_modes_do_not_sleep(big):
    with FeatureVolume(big, VolumeLimits(mb_per_s=1, iops=1), "none") as volume:
        read(volume, np.arange(0, 16_384, 8))
        assert volume.stats.throttled_seconds == 0 and volume.stats.seconds < 5
    with FeatureVolume(big, None) as volume:
        assert volume.emulation == "none"


@pytest.mark.parametrize(
    "nodes, message",
    [
        ([3, 2], "sorted and unique"),
        ([2, 2], "sorted and unique"),
        ([-1, 2], r"\[0, 20000\)"),
        ([0, 20_000], r"\[0, 20000\)"),
        ([[1, 2]], "1-D array of integer"),
        ([0.5], "1-D array of integer"),
    ],
)
def test_bad_nodes_are_refused(narrow, nodes, message):
    nodes = np.asarray(nodes)
    with FeatureVolume(narrow, VolumeLimits(**FAST), "none") as volume, pytest.raises(UsageError, match=message):
        volume.read_rows(nodes, np.empty((nodes.shape[-1], 3), dtype=np.float32))


@pytest.mark.parametrize(
    "out, message",
    [
        (np.empty((2, 4), dtype=np.float32), r"float32\[2, 3\]"),
        (np.empty((3, 3), dtype=np.float32), r"float32\[2, 3\]"),
        (np.empty((2, 3), dtype=np.float64), r"got float64"),
        (np.empty((2, 6), dtype=np.float32)[:, ::2], "C-contiguous"),
        ([[0, 0, 0], [0, 0, 0]], "got list"),
    ],
)
def test_bad_out_is_refused(narrow, out, message):
    with FeatureVolume(narrow, VolumeLimits(**FAST), "none") as volume, pytest.raises(UsageError, match=message):
        volume.read_rows(np.array([1, 2]), out)


def test_closed_volume_refuses_reads(narrow):
    volume = FeatureVolume(narrow, VolumeLimits(**FAST), "none")
    volume.close()
    volume.close()  # twice is fine
    with pytest.raises(UsageError, match="closed"):
        read(volume, [1])


def test_limits_are_validated():
    with pytest.raises(ValidationError):
        VolumeLimits(mb_per_s=0)
    with pytest.raises(ValidationError):
        VolumeLimits(iops=-5)
    with pytest.raises(ValidationError, match="multiple of the 4096"):
        VolumeLimits(max_request_bytes=5000)
    with pytest.raises(ValidationError):
        VolumeLimits(mb_per_s=125, extra=1)


def test_emulation_requests_are_checked(narrow):
    with pytest.raises(UsageError, match="unknown emulation 'fast'"):
        FeatureVolume(narrow, VolumeLimits(), "fast")
    with pytest.raises(UsageError, match="limits=None"):
        FeatureVolume(narrow, None, "token-bucket")
    with pytest.raises(UsageError, match="queue_depth must be at least 1, not 0"):
        FeatureVolume(narrow, VolumeLimits(), "none", queue_depth=0)


def test_detect_reports_each_capability_with_a_reason(narrow):
    support = detect_emulation(narrow.features_path)
    assert support.o_direct.available and support.fadvise.available
    assert support.filesystem not in ("tmpfs", "unknown") and support.device
    for capability in (support.blkio, support.o_direct, support.fadvise):
        assert capability.reason
    mode, note = support.choose("auto", VolumeLimits())
    assert mode == ("blkio" if support.blkio.available else "token-bucket") and note


def test_tmpfs_falls_back_to_page_cache_and_says_why(ram_dir):
    dataset = make_dataset(ram_dir / "ram", 1000, 8)
    support = detect_emulation(dataset.features_path)
    assert support.filesystem == "tmpfs"
    for capability in (support.blkio, support.o_direct, support.fadvise):
        assert not capability.available and "tmpfs" in capability.reason
    with FeatureVolume(dataset, VolumeLimits(**FAST)) as volume:
        assert volume.emulation == "page-cache"
        assert volume.emulation_note.startswith("approximate") and "RAM" in volume.emulation_note
        nodes = np.arange(0, 1000, 7)
        np.testing.assert_array_equal(read(volume, nodes), dataset.features[nodes])
    with pytest.raises(EmulationUnavailable, match="tmpfs"):
        FeatureVolume(dataset, VolumeLimits(), "token-bucket")
    with pytest.raises(EmulationUnavailable, match="blkio"):
        FeatureVolume(dataset, VolumeLimits(), "blkio")
