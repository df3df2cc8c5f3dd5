"""SliceGCN as one ``mpiexec`` job: ranks ``0..p-1`` hold a slice each (the memory machines),
rank p is the learner.

``train_mpi`` starts the job and returns its result; each rank runs this module's ``main``. The
configuration travels as JSON on the command line and the learner writes the result as JSON
(atomically) where the starter reads it: nothing is pickled between processes. The job is its
own, as RETEXO's is: `remotegnn launch` starts sampling memory servers, which SliceGCN does not use.
"""

from __future__ import annotations

import sys
from pathlib import Path

from foundation.errors import UsageError
from foundation.fileio import write_model
from remotegnn.launch import mpiexec_base
from remotegnn.mpi.job import ending_the_job_on_failure, run_job
from remotegnn.mpi.world import import_mpi
from remotegnn.retexo.comm import MpiEndpoint
from remotegnn.slicegcn.slicing import slice_plan
from remotegnn.slicegcn.training import (
    Graph,
    SliceConfig,
    SliceResult,
    check_slices,
    features_of,
    rank_features,
    run_learner,
    run_rank,
)
from remotegnn.store import GraphDataset

NO_SLICES = "-"  # the command line's word for "cut the columns from the full dataset"


def job_command(
    dataset: Path,
    config: SliceConfig,
    result: Path,
    slices: Path | None = None,
    *,
    hostfile: Path | None = None,
    mpiexec: str | None = None,
) -> list[str]:
    """The mpiexec argv: one rank per slice, then the learner."""
    program = [
        sys.executable, "-m", "remotegnn.slicegcn.mpi", str(dataset), config.model_dump_json(), str(result),
        str(slices) if slices else NO_SLICES,
    ]  # fmt: skip
    return [*mpiexec_base(mpiexec, hostfile), "-n", str(config.parts + 1), *program]


def train_mpi(
    dataset: str | Path,
    config: SliceConfig,
    slices: Path | None = None,
    *,
    hostfile: Path | None = None,
    mpiexec: str | None = None,
) -> SliceResult:
    """Run the job to its end and return the learner's result; a failed rank fails the job."""
    if slices is not None:
        check_slices(slices, config)

    def command(result: Path) -> list[str]:
        return job_command(Path(dataset), config, result, slices, hostfile=hostfile, mpiexec=mpiexec)

    return run_job(command, SliceResult, "slicegcn-")


def main(argv: list[str]) -> int:
    """One rank: ``python -m remotegnn.slicegcn.mpi DATASET CONFIG_JSON RESULT SLICES|-``."""
    dataset_path, config_json, result, slices_word = Path(argv[0]), argv[1], Path(argv[2]), argv[3]
    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    with ending_the_job_on_failure(comm):
        config = SliceConfig.model_validate_json(config_json)
        if comm.Get_size() != config.parts + 1:
            raise UsageError(f"the job has {comm.Get_size()} ranks; --parts {config.parts} needs {config.parts + 1}")
        dataset = GraphDataset.open(dataset_path)
        slices = None if slices_word == NO_SLICES else Path(slices_word)
        graph = Graph.of(dataset)
        endpoint = MpiEndpoint(comm)
        if endpoint.rank < config.parts:
            run_rank(endpoint.rank, endpoint, config, graph, rank_features(dataset, config, endpoint.rank, slices))
        else:
            columns = slice_plan(dataset.meta.feature_dim, config.parts)
            full = features_of(dataset) if config.fusion else None
            write_model(result, run_learner(endpoint, config, graph, columns, full))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
