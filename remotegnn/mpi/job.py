"""A training job of its own (RETEXO, SliceGCN): started, waited for, its result read back; and a
rank's failure ending the whole job.

The starter passes each rank its configuration as JSON on the command line and a path where the
last rank writes the result (atomically); nothing is pickled between processes.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from foundation.errors import MemoryBridgeError
from foundation.fileio import read_model

RESULT_FILE = "result.json"
Result = TypeVar("Result", bound=BaseModel)


def run_job(command: Callable[[Path], list[str]], model: type[Result], prefix: str) -> Result:
    """Run ``command(result_path)`` to its end and return the result it wrote; a failed rank fails it."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        result = Path(tmp) / RESULT_FILE
        status = subprocess.run(command(result), stdin=subprocess.DEVNULL).returncode
        if status != 0 or not result.is_file():
            raise MemoryBridgeError(f"the MPI training job failed (exit status {status}); its ranks' errors are above")
        return read_model(result, model, "training result")


@contextmanager
def ending_the_job_on_failure(comm) -> Iterator[None]:
    """Any exception in this rank prints its traceback and aborts every rank: one rank's failure
    must end the whole job, not leave the others waiting for it."""
    try:
        yield
    except BaseException:  # every failure, Ctrl-C included, must end the job
        sys.stderr.write(f"rank {comm.Get_rank()}: {traceback.format_exc()}")
        sys.stderr.flush()
        comm.Abort(1)
