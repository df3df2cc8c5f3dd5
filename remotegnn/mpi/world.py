"""Who is who in a ``remotegnn launch`` job.

``launch`` starts one MPMD job whose first ``REMOTEGNN_MEMORY_RANKS`` ranks run ``remotegnn
serve`` and the rest run the training script, and exports that count to every rank. Nothing
else is needed to find the memory ranks: no collective at start-up (a learner that never builds
a loader must not leave the servers waiting in one). A learner that initialises MPI here says
goodbye to the memory ranks when it exits, whatever ends it (``leave.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from foundation.errors import UsageError
from remotegnn.mpi import leave

if TYPE_CHECKING:
    from mpi4py import MPI

MEMORY_RANKS_ENV = "REMOTEGNN_MEMORY_RANKS"


def under_launch() -> bool:
    """Whether this process is a rank of a ``remotegnn launch`` job."""
    return MEMORY_RANKS_ENV in os.environ


def import_mpi():
    """mpi4py's MPI module, or a UsageError that says how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise UsageError(
            f"the MPI transport needs mpi4py and Open MPI ({exc}); install them with `bash scripts/setup.sh mpi`"
        ) from None
    return MPI


@dataclass(frozen=True)
class World:
    comm: MPI.Intracomm  # MPI.COMM_WORLD
    rank: int
    size: int
    memory_ranks: int  # ranks [0, memory_ranks) serve, the rest learn

    @property
    def is_memory(self) -> bool:
        return self.rank < self.memory_ranks

    @property
    def learners(self) -> int:
        return self.size - self.memory_ranks

    @property
    def learner_index(self) -> int:
        return self.rank - self.memory_ranks

    def learner_rank(self, index: int) -> int:
        return self.memory_ranks + index


@lru_cache(maxsize=1)
def world() -> World:
    """This job's layout (initialises MPI on first use)."""
    raw = os.environ.get(MEMORY_RANKS_ENV)
    if raw is None:
        raise UsageError(
            f"not running under `remotegnn launch` ({MEMORY_RANKS_ENV} is unset): start the job with "
            "`remotegnn launch --memory 1 -- python train.py`, or give the loader a dataset path"
        )
    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    size, rank = comm.Get_size(), comm.Get_rank()
    try:
        memory = int(raw)
    except ValueError:
        memory = -1
    if not 1 <= memory < size:
        raise UsageError(
            f"{MEMORY_RANKS_ENV}={raw!r} must be between 1 and {size - 1} (the job has {size} ranks "
            "and needs at least one learner)"
        )
    here = World(comm, rank, size, memory)
    if not here.is_memory:  # from now on MPI_Finalize waits for the memory ranks: they must hear this one leave
        leave.register(comm, memory)
    return here
