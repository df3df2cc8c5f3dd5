"""Running a full-graph job's ranks: as threads of this process, or as the ranks of one ``mpiexec`` job.

Every method (RETEXO and standard training, SliceGCN) is a :class:`RankJob`: n workers and a
master over the exchange. The runners give every method the same exchanges (queues or MPI, udp,
pinch; :mod:`fullgraph.exchange.fabrics`) and the same failure handling: one rank's failure
wakes or ends the others, and the first cause is raised, never its echoes. In an MPI job the
specification travels to each rank as JSON on the command line and the master writes its result
as JSON, atomically, where the starter reads it: nothing is pickled between processes.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final, Protocol, TypeVar

from pydantic import BaseModel, Field

from foundation import process
from foundation.errors import MemoryBridgeError, UsageError
from foundation.fileio import read_model, write_model
from foundation.models import StrictModel
from fullgraph.exchange.endpoint import CommError, Endpoint
from fullgraph.exchange.fabrics import mpi_endpoint, thread_fabric
from fullgraph.exchange.options import ExchangeOptions
from remotegnn.mpi.world import import_mpi
from remotegnn.mpmd import mpiexec_base, own_session_directory

RESULT_FILE: Final = "result.json"
log = logging.getLogger(__name__)
Result = TypeVar("Result", bound=BaseModel)
Result_co = TypeVar("Result_co", bound=BaseModel, covariant=True)


class RankJob(Protocol[Result_co]):
    """What each rank of a job runs: ``workers`` workers (ranks ``0..workers-1``) and a master (the last rank)."""

    @property
    def workers(self) -> int: ...

    def worker(self, rank: int) -> Callable[[Endpoint], None]:
        """Worker ``rank``, its data loaded; calling it with the rank's endpoint runs its part of the job.

        Loading happens here, on the caller's thread, one worker after the other: parsing files
        in several threads at once trips CPython 3.11's ast module (numpy reads .npy headers
        with ``ast.literal_eval``: "AST constructor recursion depth mismatch")."""

    def master(self, endpoint: Endpoint) -> Callable[[], Result_co]:
        """The master, built (its initial weights drawn) before any worker starts; calling it runs the job."""


class JobSpec(StrictModel):
    """What an ``mpiexec`` rank is told (as JSON): each method's spec builds its :class:`RankJob`."""

    exchange: ExchangeOptions = Field(default_factory=ExchangeOptions)

    def workers(self) -> int:
        """How many workers the job has, known before any rank starts."""
        raise NotImplementedError

    def job(self) -> RankJob[BaseModel]:
        """This rank's job."""
        raise NotImplementedError


def run_in_threads(job: RankJob[Result], options: ExchangeOptions | None = None) -> Result:
    """Run every worker as a thread of this process and the master on the calling thread, over the
    exchange ``options`` choose (in-process queues by default)."""
    fabric = thread_fabric(job.workers, options)
    errors: list[BaseException] = []

    def work(rank: int, run_worker: Callable[[Endpoint], None]) -> None:
        try:
            endpoint = fabric.endpoint(rank)
            run_worker(endpoint)
            endpoint.close()
        except BaseException as exc:  # re-raised on the calling thread below
            errors.append(exc)
            fabric.abort()

    try:
        endpoint = fabric.endpoint(job.workers)
        run_master = job.master(endpoint)
        workers = [job.worker(rank) for rank in range(job.workers)]
        threads = [
            threading.Thread(target=work, args=(rank, run_worker), name=f"worker-{rank}")
            for rank, run_worker in enumerate(workers)
        ]
        for thread in threads:
            thread.start()
        try:
            result = run_master()
            endpoint.close()
        except BaseException as exc:
            fabric.abort()
            for thread in threads:
                thread.join()
            causes = [e for e in [exc, *errors] if not isinstance(e, CommError)]  # the failure, not its echoes
            raise (causes[0] if causes else exc) from None
        for thread in threads:
            thread.join()
    finally:
        fabric.release()
    if errors:
        raise errors[0]
    return result


# -- one mpiexec job ------------------------------------------------------------------------------
def rank_program(module: str, spec: JobSpec, result: Path) -> list[str]:
    """What each rank of the job runs: ``python -m MODULE SPEC_JSON RESULT``."""
    return [sys.executable, "-m", module, spec.model_dump_json(), str(result)]


def run_mpi(
    module: str,
    spec: JobSpec,
    result_type: type[Result],
    *,
    hostfile: Path | None = None,
    mpiexec: str | None = None,
) -> Result:
    """Run the job as one ``mpiexec`` job to its end and return the master's result; a failed rank fails it."""
    ranks = spec.workers() + 1
    with tempfile.TemporaryDirectory(prefix="fullgraph-") as tmp, own_session_directory() as environment:
        result = Path(tmp) / RESULT_FILE
        command = [*mpiexec_base(mpiexec, hostfile, ranks), "-n", str(ranks), *rank_program(module, spec, result)]
        status = subprocess.run(command, stdin=subprocess.DEVNULL, env=environment).returncode
        if status != 0 or not result.is_file():
            raise MemoryBridgeError(f"the MPI training job failed (exit status {status}); its ranks' errors are above")
        return read_model(result, result_type, "training result")


def rank_main(argv: list[str], spec_type: type[JobSpec]) -> int:
    """One rank of the job: ``argv`` is ``SPEC_JSON RESULT``; the master writes the result."""
    process.start()
    comm = import_mpi().COMM_WORLD
    with ending_the_job_on_failure(comm):
        spec = spec_type.model_validate_json(argv[0])
        job = spec.job()
        if comm.Get_size() != job.workers + 1:
            raise UsageError(f"the job has {comm.Get_size()} ranks; it needs {job.workers} workers and a master")
        endpoint = mpi_endpoint(comm, spec.exchange)
        counter = None
        try:
            if spec.exchange.count_syscalls:
                from fullgraph.exchange.pinch.kernel import SyscallCounter

                counter = SyscallCounter()
                endpoint.count_syscalls(counter)
            if endpoint.rank < job.workers:
                job.worker(endpoint.rank)(endpoint)
                endpoint.close()
            else:
                outcome = job.master(endpoint)()
                endpoint.close()
                write_model(Path(argv[1]), outcome)
        finally:
            endpoint.release()
            if counter is not None:
                counter.close()
    return 0


@contextmanager
def ending_the_job_on_failure(comm) -> Iterator[None]:
    """Any exception in this rank prints its traceback and aborts every rank: one rank's failure
    must end the whole job, not leave the others waiting for it."""
    try:
        yield
    except BaseException:  # every failure, Ctrl-C included, must end the job
        log.exception("rank %d failed; ending the job", comm.Get_rank())
        logging.shutdown()  # flushed before Abort ends the process
        comm.Abort(1)
