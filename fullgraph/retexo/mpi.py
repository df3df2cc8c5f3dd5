"""RETEXO and standard training as one ``mpiexec`` job: ranks ``0..n-1`` are the workers (one part
each, on the memory machines), rank n is the master (on the learning machine).

``train_mpi`` starts the job and returns its result; each rank runs this module
(``python -m fullgraph.retexo.mpi SPEC_JSON RESULT``, see :mod:`fullgraph.ranks`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from fullgraph.exchange.options import ExchangeOptions
from fullgraph.partitioner import open_partition
from fullgraph.ranks import JobSpec, rank_main, rank_program, run_mpi
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.training import RetexoJob, TrainResult

MODULE: Final = "fullgraph.retexo.mpi"


class RetexoSpec(JobSpec):
    """What every rank is told: the partition, how to train, and over which exchange."""

    partition: Path
    config: TrainConfig

    def workers(self) -> int:
        return open_partition(self.partition).parts

    def job(self) -> RetexoJob:
        return RetexoJob(self.partition, self.config, self.exchange.exchange)


def program(spec: RetexoSpec, result: Path) -> list[str]:
    """The argv each rank runs (for jobs started by other launchers, such as the testbed's mpiexec)."""
    return rank_program(MODULE, spec, result)


def train_mpi(
    partition: str | Path,
    config: TrainConfig,
    *,
    hostfile: Path | None = None,
    mpiexec: str | None = None,
    exchange: ExchangeOptions | None = None,
) -> TrainResult:
    """Run the job to its end and return the master's result; a failed rank fails the job."""
    spec = RetexoSpec(partition=Path(partition), config=config, exchange=exchange or ExchangeOptions())
    return run_mpi(MODULE, spec, TrainResult, hostfile=hostfile, mpiexec=mpiexec)


if __name__ == "__main__":
    sys.exit(rank_main(sys.argv[1:], RetexoSpec))
