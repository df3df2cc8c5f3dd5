"""Sampling on the learner (``sampling="learner"``): the batches of memory sampling, with only row
ids going to the memory ranks and only feature rows coming back. Each test runs a real `remotegnn
launch` job (mpiexec)."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn import wire
from tests.remotegnn.mpi.conftest import rgnn_segments, run_learners
from tests.remotegnn.mpi.test_transport import CACHED

pytestmark = [pytest.mark.usefixtures("mpi"), pytest.mark.slow]

ROW_BYTES = 16 * 2  # rmat's 16 features at float16 (CACHED's wire dtype)
BATCHES = 2 * 7  # 410 train seeds / 64, two epochs


@pytest.mark.parametrize(
    ("memory", "choose"),
    [
        (1, {"options": {**CACHED, "sampling": "learner"}}),
        (2, {"options": CACHED, "launch_args": ("--sampling", "learner")}),
    ],
    ids=["1-memory-rank-loader-argument", "2-memory-ranks-launch-flag"],
)
def test_learner_sampled_batches_equal_memory_sampled_ones(rmat, tmp_path, memory, choose):
    before = rgnn_segments()
    (result,) = run_learners("modes", rmat.path, tmp_path, memory=memory, **choose)
    assert result["modes"] == ["memory", "learner"]
    assert result["batches"] == BATCHES and result["mismatches"] == []
    mine, theirs = result["stats"], result["memory_stats"]
    assert mine["batches"] == theirs["batches"] == 7
    assert mine["rows_sent"] == theirs["rows_sent"] > 0  # the same rows, asked for by id
    assert mine["rows_from_learner_cache"] == theirs["rows_from_learner_cache"] > 0
    # The memory ranks sent only rows: one part frame per batch and rank, x alone.
    frames = mine["batches"] * memory
    one_row = wire.frame_size([wire.TensorSpec("x", np.dtype(np.float16), (1, 16))])  # a frame's header, aligned
    assert mine["bytes_sent"] <= mine["rows_sent"] * ROW_BYTES + frames * one_row
    assert theirs["bytes_sent"] > mine["bytes_sent"]  # their frames carried the structure and labels too
    # The learner asked for each row it lacked by a 4-byte id, in one request frame per batch and rank.
    empty_request = wire.frame_size([wire.TensorSpec("n_id", np.dtype(np.int32), (0,))])
    assert mine["rows_sent"] * 4 <= mine["request_bytes"] <= mine["rows_sent"] * 4 + frames * (empty_request + 64)
    assert theirs["request_bytes"] == 0
    assert mine["batch_creators"]["processes"] == 1 and mine["batch_creators"]["batches"] == 7  # sampled here
    assert rgnn_segments() <= before


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [("link", 2 * 8), ("hetero", 4)],  # 500 edges / 64 for two epochs; 60 papers / 16
)
def test_learner_sampled_link_and_heterogeneous_batches_equal_local_ones(rmat, tmp_path, scenario, expected):
    dataset = rmat.path
    if scenario == "hetero":
        from remotegnn.convert.pyg import from_pyg
        from tests.remotegnn.test_hetero import graph

        dataset = from_pyg(graph(), tmp_path / "hetero").path
    (result,) = run_learners(scenario, dataset, tmp_path / "out", memory=2, options={"sampling": "learner"})
    assert result["batches"] == expected and result["mismatches"] == []


def test_a_learner_sampled_loader_resumes_mid_epoch(rmat, tmp_path):
    """A loader stopped two batches into epoch 1 and a fresh one given its state yield epoch 1 whole."""
    (result,) = run_learners("resume", rmat.path, tmp_path, memory=2, options={**CACHED, "sampling": "learner"})
    assert len(result["expected"]) > 2 and result["got"] == result["expected"]
    assert (result["state"]["epoch"], result["state"]["batches_yielded"]) == (1, 2)


def test_a_learner_sampled_epoch_left_early_then_a_whole_one(rmat, tmp_path):
    """Leaving after one batch: the learner still asks for every batch it credited, so the memory
    ranks finish the epoch and the next one starts clean."""
    (result,) = run_learners("early", rmat.path, tmp_path, memory=2, options={"sampling": "learner"})
    assert len(result["first"]) == 64
    assert sorted(result["epoch1"]) == sorted(int(v) for v in rmat.split("train"))
    assert result["stats_epoch"] == 1
