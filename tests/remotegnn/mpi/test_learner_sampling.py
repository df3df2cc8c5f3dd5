"""Sampling on the learner (``sampling="learner"``): the batches of memory sampling, with only row
ids going to the memory ranks and only feature rows coming back. Each test runs a real `remotegnn
launch` job (mpiexec)."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn import wire
from tests.remotegnn.mpi.conftest import Scenarios, rgnn_segments, run_learners, run_scenarios
from tests.remotegnn.mpi.test_transport import CACHED

# One worker runs this module's tests, so the shared job runs once.
pytestmark = [
    pytest.mark.usefixtures("mpi"),
    pytest.mark.slow,
    pytest.mark.xdist_group("remotegnn-mpi-learner-sampling"),
]

ROW_BYTES = 16 * 2  # rmat's 16 features at float16 (CACHED's wire dtype)
BATCHES = 2 * 7  # 410 train seeds / 64, two epochs
LEARNER = {"sampling": "learner"}


@pytest.fixture(scope="module")
def two_memory_ranks(mpi, rmat, hetero_dataset, tmp_path_factory) -> Scenarios:
    """One job: two memory ranks, one learner whose loaders sample on the learner."""
    scenarios = {
        "link": ("link", rmat.path, LEARNER),
        "hetero": ("hetero", hetero_dataset, LEARNER),
        "resume": ("resume", rmat.path, {**CACHED, **LEARNER}),
        "early": ("early", rmat.path, LEARNER),  # last: it leaves its loader open
    }
    return run_scenarios(scenarios, tmp_path_factory.mktemp("learner-sampling"), memory=2)


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
def test_learner_sampled_link_and_heterogeneous_batches_equal_local_ones(two_memory_ranks, scenario, expected):
    (result,) = two_memory_ranks.results[scenario]
    assert result["batches"] == expected and result["mismatches"] == []


def test_a_learner_sampled_loader_resumes_mid_epoch(two_memory_ranks):
    """A loader stopped two batches into epoch 1 and a fresh one given its state yield epoch 1 whole."""
    (result,) = two_memory_ranks.results["resume"]
    assert len(result["expected"]) > 2 and result["got"] == result["expected"]
    assert (result["state"]["epoch"], result["state"]["batches_yielded"]) == (1, 2)


def test_a_learner_sampled_epoch_left_early_then_a_whole_one(rmat, two_memory_ranks):
    """Leaving after one batch: the learner still asks for every batch it credited, so the memory
    ranks finish the epoch and the next one starts clean."""
    (result,) = two_memory_ranks.results["early"]
    assert len(result["first"]) == 64
    assert sorted(result["epoch1"]) == sorted(int(v) for v in rmat.split("train"))
    assert result["stats_epoch"] == 1
