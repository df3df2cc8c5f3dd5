"""fullgraph.retexo.mpi: the same training as one real mpiexec job (workers + master)."""

from __future__ import annotations

import shutil

import pytest

from foundation.errors import MemoryBridgeError
from fullgraph.exchange.options import ExchangeOptions
from fullgraph.partitioner import boundary_path
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.mpi import train_mpi
from fullgraph.retexo.training import train_local
from tests.fullgraph.conftest import free_port_range

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


@pytest.mark.parametrize("method", ["standard", "retexo"])
def test_an_mpi_job_over_udp_trains_exactly_as_threads_do(mpi, partitions, method):
    config = TrainConfig(method=method, model="sage", hidden=8, rounds=3)
    threads = train_local(partitions["random3"], config)
    job = train_mpi(partitions["random3"], config, exchange=ExchangeOptions(exchange="udp", port=free_port_range(4)))
    assert job.exchange == "udp"
    assert [[r.loss for r in s.rounds] for s in job.stages] == [[r.loss for r in s.rounds] for s in threads.stages]
    assert job.measured == threads.measured and job.measured_over_predicted == 1.0
    assert [t.total() for t in job.traffic] == [t.total() for t in threads.traffic]
    assert all(t.wire is not None and t.wire.datagrams_sent > 0 for t in job.traffic)


def test_an_mpi_job_over_pinch_on_one_host_sums_in_user_space(mpi, partitions, capfd):
    config = TrainConfig(method="standard", model="sage", hidden=8, rounds=3)
    threads = train_local(partitions["random3"], config)
    capfd.readouterr()
    job = train_mpi(partitions["random3"], config, exchange=ExchangeOptions(exchange="pinch", port=free_port_range(4)))
    err = capfd.readouterr().err
    for rank in range(4):  # every rank says why it does not use the kernel programs
        assert f"rank {rank}: pinch sums in user space: another rank of this job shares" in err
    assert job.exchange == "pinch"
    job_losses = [r.loss for s in job.stages for r in s.rounds]
    assert job_losses == pytest.approx([r.loss for s in threads.stages for r in s.rounds], rel=1e-4)
    assert job.measured == threads.measured
    assert all(t.wire is not None and t.wire.kernel_records == 0 for t in job.traffic)
