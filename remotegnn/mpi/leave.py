"""How a learner rank leaves a ``remotegnn launch`` job, whatever ends it.

The memory ranks serve until every learner has said goodbye (``Bye``), and Open MPI's
``MPI_Finalize`` waits for every rank of the job. A learner that initialised MPI and exited
without a goodbye (an error before its first loader, a script that never builds one) left the
memory ranks serving and itself waiting in finalize: the job hung. So the goodbye is registered
when a learner first initialises MPI (``remotegnn.mpi.world.world``), not when a loader opens.

Before the goodbye, each loader's receives still posted are withdrawn (``Withdrawable``): the
memory ranks send exactly the batches they were credited, so waiting up to ``LEAVE_S`` lets
those sends complete; what is still pending then is cancelled. A memory rank sending into a
receive that never completes keeps that batch's memory until it finalizes (``server.py``), so
neither side frees memory that MPI still reads or writes.

An error exit of a learner (an exception, a non-zero ``sys.exit``) ends the whole job: ``remotegnn
launch`` runs Python programs under ``python -m mpi4py``, which turns it into ``MPI_Abort`` once
these handlers have run (``remotegnn.mpmd.aborting``).
"""

from __future__ import annotations

import atexit
import time
import weakref
from typing import TYPE_CHECKING, Protocol

from remotegnn.mpi.messages import CONTROL_TAG, Bye, pack

if TYPE_CHECKING:
    from mpi4py import MPI

LEAVE_S = 5.0
"""Longest a leaving learner waits for the batches already on their way to it: a few batches of
sampling and transfer, far less than a stalled job would take."""


class Withdrawable(Protocol):
    def withdraw(self, deadline: float) -> None:
        """Complete or cancel every receive still posted, by ``deadline`` (``time.monotonic``)."""


_open: weakref.WeakSet[Withdrawable] = weakref.WeakSet()
_registered: list[MPI.Intracomm] = []


def track(source: Withdrawable) -> None:
    """Withdraw ``source``'s receives before this learner says goodbye (if it is still alive)."""
    _open.add(source)


def register(comm: MPI.Intracomm, memory_ranks: int) -> None:
    """Say goodbye to every memory rank (ranks 0 to ``memory_ranks`` - 1 of ``comm``) when this
    process exits (once per process)."""
    if not _registered:
        _registered.append(comm)
        atexit.register(_leave, comm, memory_ranks)


def _leave(comm: MPI.Intracomm, memory_ranks: int) -> None:
    from mpi4py import MPI  # initialised already: this learner registered with its communicator

    if MPI.Is_finalized():  # the script finalized MPI itself: nothing can be sent any more
        return
    deadline = time.monotonic() + LEAVE_S
    try:
        for source in list(_open):
            source.withdraw(deadline)
    finally:  # whatever withdrawing met, the memory ranks must hear this learner leave
        buf = pack(Bye())
        for rank in range(memory_ranks):
            comm.Send([buf, MPI.BYTE], dest=rank, tag=CONTROL_TAG)
