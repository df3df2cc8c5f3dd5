"""SliceGCN as one ``mpiexec`` job: ranks ``0..p-1`` hold a slice each (the memory machines), rank p
is the learner.

``train_mpi`` starts the job and returns its result; each rank runs this module
(``python -m fullgraph.slicegcn.mpi SPEC_JSON RESULT``, see :mod:`fullgraph.ranks`). The job is its
own, as RETEXO's is: `remotegnn launch` starts sampling memory servers, which SliceGCN does not use.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from fullgraph.exchange.options import ExchangeOptions
from fullgraph.ranks import JobSpec, rank_main, rank_program, run_mpi
from fullgraph.slicegcn.config import SliceConfig
from fullgraph.slicegcn.training import SliceJob, SliceResult, check_slices

MODULE: Final = "fullgraph.slicegcn.mpi"


class SliceSpec(JobSpec):
    """What every rank is told: the dataset (and its slices, if cut ahead), how to train, and the exchange."""

    dataset: Path
    config: SliceConfig
    slices: Path | None = None

    def workers(self) -> int:
        return self.config.parts

    def job(self) -> SliceJob:
        return SliceJob(self.dataset, self.config, self.slices, self.exchange.exchange)


def program(spec: SliceSpec, result: Path) -> list[str]:
    """The argv each rank runs (for jobs started by other launchers, such as the testbed's mpiexec)."""
    return rank_program(MODULE, spec, result)


def train_mpi(
    dataset: str | Path,
    config: SliceConfig,
    slices: Path | None = None,
    *,
    hostfile: Path | None = None,
    mpiexec: str | None = None,
    exchange: ExchangeOptions | None = None,
) -> SliceResult:
    """Run the job to its end and return the learner's result; a failed rank fails the job."""
    if slices is not None:
        check_slices(slices, config)
    spec = SliceSpec(dataset=Path(dataset), config=config, slices=slices, exchange=exchange or ExchangeOptions())
    return run_mpi(MODULE, spec, SliceResult, hostfile=hostfile, mpiexec=mpiexec)


if __name__ == "__main__":
    sys.exit(rank_main(sys.argv[1:], SliceSpec))
