"""`remotegnn reorder` as users run it: a real process of the console script."""

from __future__ import annotations

import json

import numpy as np
import pytest

from remotegnn.store import GraphDataset
from tests.remotegnn.cli.test_commands import run
from tests.remotegnn.store.test_reorder import assert_same_files


def test_reorder_writes_the_dataset_and_reports_its_cost(rmat, tmp_path):
    done = run("reorder", str(rmat.path), str(tmp_path / "bfs"), "--order", "bfs", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["order"] == "bfs" and result["meta"]["node_order"] == "bfs"
    assert 0 < result["order_seconds"] <= result["seconds"] and result["seconds_per_million_edges"] > 0
    moved = GraphDataset.open(tmp_path / "bfs", verify=True)
    assert np.array_equal(moved.features, np.asarray(rmat.features)[np.asarray(moved.user_ids)])
    table = run("info", str(tmp_path / "bfs"))
    assert "node order" in table.stdout and "bfs" in table.stdout
    done = run("reorder", str(rmat.path), str(tmp_path / "deg"))
    assert done.returncode == 0 and "by degree" in done.stdout and "per million edges" in done.stdout
    done = run("reorder", str(rmat.path), str(tmp_path / "bfs-1mib"), "--order", "bfs", "--memory-mib", "1")
    assert done.returncode == 0, done.stderr
    assert_same_files(tmp_path / "bfs", tmp_path / "bfs-1mib")  # a smaller budget, the same files


def test_reorder_mistakes_are_one_line_and_leave_nothing(rmat, tmp_path):
    done = run("reorder", str(rmat.path), str(tmp_path / "x"), "--order", "hilbert")
    assert done.returncode == 2 and "choose one of degree, dbg, bfs, rcm" in done.stderr
    done = run("reorder", str(rmat.path), str(tmp_path / "x"), "--memory-mib", "0")
    assert done.returncode == 2 and "--memory-mib" in done.stderr
    done = run("reorder", str(tmp_path / "missing"), str(tmp_path / "y"))
    assert done.returncode != 0 and "not a dataset directory" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("size", ["64k", "1400k"], ids=["full-in-the-order", "full-in-the-features"])
def test_a_full_disk_ends_reorder_with_one_line_and_leaves_nothing(rmat, small_disk, size):
    """The disk fills while the order's scratch files are written, or once most of the output is:
    either way one line says so, and neither the partial output nor the scratch files stay."""
    disk = small_disk(size)
    done = run("reorder", str(rmat.path), str(disk / "out"), "--order", "rcm")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "small-disk is full (No space left on device); nothing was written to" in line
    assert "Free space there or write to a disk with room" in line
    assert list(disk.iterdir()) == []
