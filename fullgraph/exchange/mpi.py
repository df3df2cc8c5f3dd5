"""The exchange between the ranks of one ``mpiexec`` job: buffers sent from numpy memory, never pickled."""

from __future__ import annotations

import numpy as np

from fullgraph.exchange.endpoint import CommError, Endpoint


class MpiEndpoint(Endpoint):
    """This process's rank of an ``mpiexec`` job of workers + 1 ranks (the master is the last)."""

    def __init__(self, comm):
        super().__init__(comm.Get_rank(), comm.Get_size() - 1)
        self.comm = comm

    def _post(self, dst: int, array: np.ndarray, tag: int) -> object:
        return self.comm.Isend(array.reshape(-1).view(np.uint8), dest=dst, tag=tag)

    def _take(self, src: int, out: np.ndarray, tag: int) -> None:
        from mpi4py import MPI

        status = MPI.Status()
        self.comm.Recv(out.reshape(-1).view(np.uint8), source=src, tag=tag, status=status)
        if status.Get_count(MPI.BYTE) != out.nbytes:
            raise CommError(
                f"rank {self.rank}: rank {src} sent {status.Get_count(MPI.BYTE)} bytes, {out.nbytes} expected"
            )

    def _complete(self, handles: list[object]) -> None:
        from mpi4py import MPI

        MPI.Request.Waitall(handles)  # type: ignore[arg-type]  # mpi4py Requests
