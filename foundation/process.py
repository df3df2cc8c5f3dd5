"""What every entry point of the project does as its process starts: the console scripts
(``planner``, ``remotegnn``, ``fullgraph``, ``provision``, ``testbed``) and each rank of an MPI job."""

from __future__ import annotations

import atexit
import gc

from foundation import logs


def start() -> None:
    """Show diagnostics on stderr (:func:`foundation.logs.configure`), and leave the objects still
    alive when the process exits to the operating system.

    The interpreter's exit ends with a garbage collection over every object it tracks: with torch
    and PyG imported, about 0.7 CPU seconds a process, paid by every rank of every job for memory
    the operating system takes back anyway (0.06 s for a command line without torch). Registered
    first, the handler that exempts those objects runs after every other exit handler (``atexit``
    runs the last registered first), so ``MPI_Finalize`` and temporary directories' clean-up still
    happen, and objects whose last reference goes are finalised as before. Only reference cycles
    still alive at exit go unfinalised, which Python never promised to finalise; the product closes
    its files and releases its resources explicitly."""
    logs.configure()
    atexit.register(gc.freeze)
