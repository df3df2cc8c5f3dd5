"""Distributed training as one ``mpiexec`` job: ranks ``0..n-1`` are the workers (one part each,
on the memory machines), rank n is the master (on the learning machine).

``train_mpi`` starts the job and returns its result; each rank runs this module's ``main``. The
configuration travels as JSON on the command line and the master writes the result as JSON
(atomically) where the starter reads it: nothing is pickled between processes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from foundation.errors import UsageError
from foundation.fileio import write_model
from remotegnn.launch import mpiexec_base
from remotegnn.mpi.job import ending_the_job_on_failure, run_job
from remotegnn.mpi.world import import_mpi
from remotegnn.pinch.endpoint import ExchangeOptions, mpi_endpoint
from remotegnn.retexo.part import load_part
from remotegnn.retexo.partition import open_partition
from remotegnn.retexo.training import Master, TrainConfig, TrainResult, run_master, run_worker


def job_command(
    partition: Path,
    config: TrainConfig,
    result: Path,
    *,
    hostfile: Path | None = None,
    mpiexec: str | None = None,
    exchange: ExchangeOptions | None = None,
) -> list[str]:
    """The mpiexec argv: one rank per part, then the master."""
    parts = open_partition(partition).parts
    options = (exchange or ExchangeOptions()).model_dump_json()
    program = [
        sys.executable,
        "-m",
        "remotegnn.retexo.mpi",
        str(partition),
        config.model_dump_json(),
        str(result),
        options,
    ]
    return [*mpiexec_base(mpiexec, hostfile), "-n", str(parts + 1), *program]


def train_mpi(
    partition: str | Path,
    config: TrainConfig,
    *,
    hostfile: Path | None = None,
    mpiexec: str | None = None,
    exchange: ExchangeOptions | None = None,
) -> TrainResult:
    """Run the job to its end and return the master's result; a failed rank fails the job."""

    def command(result: Path) -> list[str]:
        return job_command(Path(partition), config, result, hostfile=hostfile, mpiexec=mpiexec, exchange=exchange)

    return run_job(command, TrainResult, "retexo-")


def main(argv: list[str]) -> int:
    """One rank of the job: ``python -m remotegnn.retexo.mpi PARTITION CONFIG_JSON RESULT [EXCHANGE_JSON]``."""
    partition, config_json, result = Path(argv[0]), argv[1], Path(argv[2])
    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    with ending_the_job_on_failure(comm):
        config = TrainConfig.model_validate_json(config_json)
        exchange = ExchangeOptions.model_validate_json(argv[3]) if len(argv) > 3 else ExchangeOptions()
        meta = open_partition(partition)
        if comm.Get_size() != meta.parts + 1:
            raise UsageError(f"the job has {comm.Get_size()} ranks; {partition} needs {meta.parts} workers + 1 master")
        endpoint = mpi_endpoint(comm, exchange)
        counter = None
        try:
            if exchange.count_syscalls:
                from remotegnn.pinch.kernel import SyscallCounter

                counter = SyscallCounter()
                endpoint.count_syscalls(counter)
            if endpoint.rank < meta.parts:
                run_worker(load_part(partition, endpoint.rank, meta), endpoint, config, meta.num_classes)
                endpoint.close()
            else:
                started = time.perf_counter()
                master = Master(endpoint, config, meta.feature_dim, meta.num_classes)
                outcome = run_master(master, meta, started)
                endpoint.close()
                write_model(result, outcome.model_copy(update={"exchange": exchange.exchange}))
        finally:
            endpoint.release()
            if counter is not None:
                counter.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
