"""Who samples (``sampling=``, ``remotegnn launch --sampling``): resolved, validated and passed on
without MPI (the MPI mode itself: tests/remotegnn/mpi/test_learner_sampling.py)."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from foundation.errors import UsageError
from remotegnn.loader import DistributedGraphLoader
from remotegnn.mpi.messages import Open
from remotegnn.mpmd import LaunchOptions, mpiexec_command
from remotegnn.sampling_mode import SAMPLING_ENV, sampling_mode
from remotegnn.server import ServerOptions


def test_the_loader_argument_wins_over_the_launch_which_wins_over_memory(monkeypatch):
    monkeypatch.delenv(SAMPLING_ENV, raising=False)
    assert sampling_mode(None) == "memory"
    monkeypatch.setenv(SAMPLING_ENV, "learner")
    assert sampling_mode(None) == "learner"
    assert sampling_mode("memory") == "memory"


def test_a_bad_mode_is_refused_naming_where_it_came_from(rmat, monkeypatch):
    with pytest.raises(UsageError, match="sampling='both': choose 'memory'"):
        DistributedGraphLoader(rmat.path, [2], sampling="both")
    monkeypatch.setenv(SAMPLING_ENV, "nobody")
    with pytest.raises(UsageError, match=f"{SAMPLING_ENV}='nobody'"):
        sampling_mode(None)
    with pytest.raises(ValidationError, match="sampling"):
        Open(session=0, dataset=None, options={}, learner=0, learners=1, sampling="both")
    with pytest.raises(ValidationError, match="sampling"):
        LaunchOptions(sampling="both")


def test_launch_passes_learner_sampling_to_every_rank():
    command = mpiexec_command(LaunchOptions(sampling="learner"), ["python", "train.py"])
    assert f"{SAMPLING_ENV}=learner" in command
    assert not any(SAMPLING_ENV in part for part in mpiexec_command(LaunchOptions(), ["python", "train.py"]))


def test_in_process_learner_sampling_is_the_local_transport_as_it_is(rmat):
    """Without MPI sampling already runs on the learner's host: the same batches either way."""
    common = dict(input_nodes="train", batch_size=128, seed=1, zero_copy=False, server=ServerOptions(batch_creators=1))
    with (
        DistributedGraphLoader(rmat.path, [5, 3], sampling="learner", **common) as mine,
        DistributedGraphLoader(rmat.path, [5, 3], **common) as theirs,
    ):
        assert mine.sampling == "learner"
        for a, b in zip(mine, theirs, strict=True):
            assert torch.equal(a.n_id, b.n_id) and torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
