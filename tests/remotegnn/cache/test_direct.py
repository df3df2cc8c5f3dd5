"""Reading feature rows past the page cache: the rows, what is read, and the page cache left alone."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.cache import direct
from remotegnn.cache.direct import DirectRows
from remotegnn.errors import DatasetError
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth
from tests.remotegnn.cache.direct_reads import record_reads

SMALL = 4096
"""Windows of one page and pieces of two, so a small graph's reads have many pieces and runs."""


@pytest.fixture(scope="module")
def odd_rows(tmp_path_factory) -> GraphDataset:
    """60-byte rows (15 float32), which straddle every window and piece boundary in turn."""
    path = tmp_path_factory.mktemp("direct") / "odd"
    synth(SynthSpec(nodes=4096, edges=20_000, dim=15, classes=4, seed=3), path, progress=False)
    return GraphDataset.open(path)


@pytest.fixture
def small_reads(monkeypatch) -> list[tuple[int, int]]:
    """Shrink the windows and pieces, and record every read as (offset, bytes asked)."""
    return record_reads(monkeypatch, SMALL, 2 * SMALL)


def parts_of(num_nodes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint sorted node sets, clustered in places and sparse in others."""
    rng = np.random.default_rng(seed)
    picked = np.unique(np.concatenate([rng.choice(num_nodes, num_nodes // 8, replace=False), np.arange(100, 400)]))
    second = rng.random(len(picked)) < 0.4
    return picked[~second], picked[second]


def windows_of(dataset: GraphDataset, nodes: np.ndarray, window: int) -> np.ndarray:
    starts = dataset.features_offset + nodes * dataset.meta.row_bytes
    return np.unique(np.concatenate([starts // window, (starts + dataset.meta.row_bytes - 1) // window]))


@pytest.mark.parametrize("small", [False, True], ids=["default sizes", "page-sized windows"])
def test_each_part_gets_exactly_its_stored_rows(odd_rows, small, request):
    if small:
        request.getfixturevalue("small_reads")
    first, second = parts_of(odd_rows.meta.num_nodes, seed=1)
    out_first = np.zeros((len(first), 15), dtype=np.float32)
    out_second = np.zeros((len(second), 15), dtype=np.float32)
    last = np.arange(odd_rows.meta.num_nodes - 3, odd_rows.meta.num_nodes)
    tail = np.zeros((3, 15), np.float32)
    with DirectRows.of(odd_rows) as reader:
        reader.read([(first, out_first), (second, out_second)])
        reader.read([(last, tail)])
        reader.read([(np.empty(0, dtype=np.int64), np.empty((0, 15), np.float32))])
    assert np.array_equal(out_first, odd_rows.features[first])
    assert np.array_equal(out_second, odd_rows.features[second])
    assert np.array_equal(tail, odd_rows.features[-3:])  # the last row, up to the file's end


def test_it_reads_every_window_holding_a_row_and_no_other(odd_rows, small_reads):
    first, second = parts_of(odd_rows.meta.num_nodes, seed=2)
    with DirectRows.of(odd_rows) as reader:
        reader.read(
            [(first, np.empty((len(first), 15), np.float32)), (second, np.empty((len(second), 15), np.float32))]
        )
        assert reader.direct  # a temporary folder on a disk takes O_DIRECT
        read_bytes = reader.bytes_read
    wanted = windows_of(odd_rows, np.union1d(first, second), SMALL)
    covered = np.concatenate([np.arange(offset // SMALL, -(-(offset + size) // SMALL)) for offset, size in small_reads])
    assert np.array_equal(np.unique(covered), wanted)
    assert all(offset % SMALL == 0 and size % SMALL == 0 and size <= 3 * SMALL for offset, size in small_reads)
    # each window is read once, but for the one a row straddles where a piece ends
    assert len(covered) <= len(wanted) + len(small_reads)
    assert read_bytes <= sum(size for _, size in small_reads)


@pytest.mark.skipif(shutil.which("fincore") is None, reason="needs util-linux's fincore")
def test_the_rows_read_stay_out_of_the_page_cache(odd_rows, tmp_path):
    path = tmp_path / "copy"
    shutil.copytree(odd_rows.path, path)
    dataset = GraphDataset.open(path)
    argv = ["fincore", "--bytes", "--noheadings", "--output", "RES", str(dataset.features_path)]
    nodes = np.arange(0, dataset.meta.num_nodes, 3)
    out = np.empty((len(nodes), 15), dtype=np.float32)
    with DirectRows.of(dataset) as reader:  # it reads the file's header (where row 0 starts) as it opens
        if not reader.direct:
            pytest.skip(f"{tmp_path} is on a filesystem that refuses O_DIRECT")
        fd = os.open(dataset.features_path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        if int(subprocess.run(argv, check=True, capture_output=True, text=True).stdout):
            pytest.skip("this kernel kept the file's pages after POSIX_FADV_DONTNEED")
        reader.read([(nodes, out)])
    assert int(subprocess.run(argv, check=True, capture_output=True, text=True).stdout) == 0
    assert np.array_equal(out, np.load(dataset.features_path)[nodes])


def test_where_the_filesystem_refuses_direct_reads_it_reads_the_same_through_the_page_cache(odd_rows, monkeypatch):
    real_open = os.open

    def refuse_direct(path, flags, *args):
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, "Invalid argument", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(direct.os, "open", refuse_direct)
    nodes = np.arange(5, odd_rows.meta.num_nodes, 7)
    out = np.empty((len(nodes), 15), dtype=np.float32)
    with DirectRows.of(odd_rows) as reader:
        reader.read([(nodes, out)])
        assert not reader.direct
    assert np.array_equal(out, odd_rows.features[nodes])


def test_a_file_shorter_than_its_rows_is_named_and_a_wrong_out_refused(odd_rows, tmp_path):
    path = tmp_path / "short"
    shutil.copytree(odd_rows.path, path)
    dataset = GraphDataset.open(path)
    with DirectRows.of(dataset) as reader:
        with pytest.raises(UsageError, match="out must be"):
            reader.read([(np.arange(4), np.empty((4, 16), np.float32))])
        os.truncate(dataset.features_path, dataset.features_offset + 100 * dataset.meta.row_bytes)
        with pytest.raises(DatasetError, match="features.npy ends at byte"):
            reader.read([(np.array([10, 3000]), np.empty((2, 15), np.float32))])
