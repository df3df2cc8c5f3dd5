"""remotegnn.retexo.mpi: the same training as one real mpiexec job (workers + master)."""

from __future__ import annotations

import shutil

import pytest

from foundation.errors import MemoryBridgeError
from remotegnn.retexo.mpi import train_mpi
from remotegnn.retexo.partition import boundary_path
from remotegnn.retexo.training import TrainConfig, train_local

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("method", "patience"), [("standard", None), ("retexo", None), ("retexo", 1)])
def test_an_mpi_job_trains_exactly_as_threads_do(mpi, partitions, method, patience):
    config = TrainConfig(method=method, model="sage", hidden=8, rounds=3 if patience is None else 20, patience=patience)
    threads = train_local(partitions["random3"], config)
    job = train_mpi(partitions["random3"], config)
    assert [len(s.rounds) for s in job.stages] == [len(s.rounds) for s in threads.stages]
    for a, b in zip(threads.stages, job.stages):
        assert [r.loss for r in a.rounds] == pytest.approx([r.loss for r in b.rounds], abs=1e-6)
    assert job.measured == threads.measured
    assert job.measured_over_predicted == 1.0 or patience is not None
    assert [t.total() for t in job.traffic] == [t.total() for t in threads.traffic]


def test_a_failing_rank_fails_the_job(mpi, partitions, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(partitions["random3"], broken)
    boundary_path(broken, 2).write_bytes(b"not a boundary file")
    with pytest.raises(MemoryBridgeError, match="MPI training job failed"):
        train_mpi(broken, TrainConfig(hidden=8, rounds=2))
