"""fullgraph.slicegcn.mpi: the same training as one real mpiexec job (p slice ranks + the learner)."""

from __future__ import annotations

import pytest

from fullgraph.exchange.options import ExchangeOptions
from fullgraph.slicegcn.config import SliceConfig
from fullgraph.slicegcn.mpi import train_mpi
from fullgraph.slicegcn.training import train_local
from tests.fullgraph.conftest import free_port_range

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("variant", [{"parts": 2}, {"parts": 3, "encoding": True, "fusion": True}])
def test_an_mpi_job_trains_exactly_as_threads_do(mpi, graph, variant):
    config = SliceConfig(epochs=3, hidden=12, layers=2, **variant)
    threads = train_local(graph.path, config)
    job = train_mpi(graph.path, config)
    assert [e.loss for e in job.epochs] == pytest.approx([e.loss for e in threads.epochs], abs=1e-6)
    scores = [s for e in job.epochs for s in (e.val, e.test)]
    assert scores == pytest.approx([s for e in threads.epochs for s in (e.val, e.test)], abs=1e-6)
    assert [t.total() for t in job.traffic] == [t.total() for t in threads.traffic]
    assert len(job.times) == config.parts


def test_an_mpi_job_over_udp_trains_to_the_bit_as_threads_do(mpi, graph):
    config = SliceConfig(parts=2, epochs=3, hidden=12, layers=2)
    threads = train_local(graph.path, config)
    job = train_mpi(graph.path, config, exchange=ExchangeOptions(exchange="udp", port=free_port_range(3)))
    assert job.exchange == "udp"
    assert [(e.loss, e.val, e.test) for e in job.epochs] == [(e.loss, e.val, e.test) for e in threads.epochs]
    assert [t.total() for t in job.traffic] == [t.total() for t in threads.traffic]
    assert all(t.wire is not None and t.wire.datagrams_sent > 0 for t in job.traffic)


def test_a_bad_dataset_fails_the_job_with_the_ranks_error(mpi, tmp_path, capfd):
    from foundation.errors import MemoryBridgeError

    with pytest.raises(MemoryBridgeError, match="the MPI training job failed"):
        train_mpi(tmp_path / "missing", SliceConfig(parts=2, epochs=1))
    assert "is not a dataset directory" in capfd.readouterr().err
