"""Batches over MPI are the batches of the local transport; memory ranks shard rows; learner
ranks split the seeds. Each test runs a real `remotegnn launch` job (mpiexec, 2-3 ranks)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.remotegnn.mpi.conftest import rgnn_segments, run_learners

pytestmark = [pytest.mark.usefixtures("mpi"), pytest.mark.slow]


@pytest.mark.parametrize("memory", [1, 2])
def test_mpi_batches_equal_local_batches(rmat, tmp_path, memory):
    before = rgnn_segments()
    (result,) = run_learners("compare", rmat.path, tmp_path, memory=memory)
    assert result["batches"] == 2 * 7  # 410 train seeds / 64, two epochs
    assert result["mismatches"] == []
    stats = result["stats"]
    assert stats["batches"] == 7 and stats["epoch"] == 1
    assert stats["batch_creators"]["processes"] == memory
    assert stats["vector_loaders"]["batches"] == 7 * memory  # every rank sends its rows of every batch
    assert rgnn_segments() <= before


def test_learner_ranks_get_disjoint_seed_slices(rmat, tmp_path):
    results = run_learners("seeds", rmat.path, tmp_path, learners=2)
    train = np.sort(np.asarray(rmat.split("train")))
    for epoch in range(2):
        slices = [np.asarray(r["epochs"][epoch]) for r in results]
        assert not np.intersect1d(*slices).size
        assert np.array_equal(np.sort(np.concatenate(slices)), train)
    assert results[0]["epochs"][0] != results[0]["epochs"][1]  # reshuffled: a new slice each epoch
    assert sum(r["len"] for r in results) >= len(train) // 64


def test_abandoned_epoch_then_a_whole_one(rmat, tmp_path):
    (result,) = run_learners("early", rmat.path, tmp_path)
    assert len(result["first"]) == 64
    assert sorted(result["epoch1"]) == sorted(int(v) for v in rmat.split("train"))
    assert result["stats_epoch"] == 1  # the stats belong to the epoch read, not the abandoned one
