"""Distributed training as one ``mpiexec`` job: ranks ``0..n-1`` are the workers (one part each,
on the memory machines), rank n is the master (on the learning machine).

``train_mpi`` starts the job and returns its result; each rank runs this module's ``main``. The
configuration travels as JSON on the command line and the master writes the result as JSON
(atomically) where the starter reads it: nothing is pickled between processes.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from foundation.errors import MemoryBridgeError, UsageError
from foundation.fileio import read_model, write_model
from remotegnn.launch import mpiexec_base
from remotegnn.mpi.world import import_mpi
from remotegnn.retexo.comm import MpiEndpoint
from remotegnn.retexo.part import load_part
from remotegnn.retexo.partition import open_partition
from remotegnn.retexo.training import Master, TrainConfig, TrainResult, run_master, run_worker

RESULT_FILE = "result.json"


def job_command(
    partition: Path, config: TrainConfig, result: Path, *, hostfile: Path | None = None, mpiexec: str | None = None
) -> list[str]:
    """The mpiexec argv: one rank per part, then the master."""
    parts = open_partition(partition).parts
    program = [sys.executable, "-m", "remotegnn.retexo.mpi", str(partition), config.model_dump_json(), str(result)]
    return [*mpiexec_base(mpiexec, hostfile), "-n", str(parts + 1), *program]


def train_mpi(
    partition: str | Path, config: TrainConfig, *, hostfile: Path | None = None, mpiexec: str | None = None
) -> TrainResult:
    """Run the job to its end and return the master's result; a failed rank fails the job."""
    with tempfile.TemporaryDirectory(prefix="retexo-") as tmp:
        result = Path(tmp) / RESULT_FILE
        command = job_command(Path(partition), config, result, hostfile=hostfile, mpiexec=mpiexec)
        status = subprocess.run(command, stdin=subprocess.DEVNULL).returncode
        if status != 0 or not result.is_file():
            raise MemoryBridgeError(f"the MPI training job failed (exit status {status}); its ranks' errors are above")
        return read_model(result, TrainResult, "training result")


def main(argv: list[str]) -> int:
    """One rank of the job: ``python -m remotegnn.retexo.mpi PARTITION CONFIG_JSON RESULT``."""
    partition, config_json, result = Path(argv[0]), argv[1], Path(argv[2])
    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    try:
        config = TrainConfig.model_validate_json(config_json)
        meta = open_partition(partition)
        if comm.Get_size() != meta.parts + 1:
            raise UsageError(f"the job has {comm.Get_size()} ranks; {partition} needs {meta.parts} workers + 1 master")
        endpoint = MpiEndpoint(comm)
        if endpoint.rank < meta.parts:
            run_worker(load_part(partition, endpoint.rank, meta), endpoint, config, meta.num_classes)
        else:
            started = time.perf_counter()
            master = Master(endpoint, config, meta.feature_dim, meta.num_classes)
            write_model(result, run_master(master, meta, started))
    except BaseException:  # one rank's failure must end the whole job, not leave the others waiting
        sys.stderr.write(f"rank {comm.Get_rank()}: {traceback.format_exc()}")
        sys.stderr.flush()
        comm.Abort(1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
