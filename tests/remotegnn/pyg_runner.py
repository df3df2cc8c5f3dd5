"""Runs training scripts as ``__main__`` in forked children of one process that has imported torch,
PyG and the loaders already: each run still gets a process of its own, its own ``sys.argv`` and a
clean module state, but not the seconds of imports every fresh interpreter pays.

Protocol, one JSON object a line: ``{"script": PATH, "args": [...]}`` in, ``{"exit": CODE}`` out.
The child waits for its threads and runs the exit handlers as a fresh interpreter would
(``atexit``: a loader's worker processes, shared memory, temporary directories), flushes its
output, then ends without the interpreter's teardown: with torch and PyG loaded, that final sweep
over every object cost about a second a run (a no-op script took 1.1 s a run instead of 0.05 s).
Objects still alive then are not finalised, so a script must close what it writes (the scripts
here write with ``with``).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import runpy
import sys
import threading
import traceback

# Imported here once, for every run: the seconds each fresh interpreter would spend on them.
WARM = (
    "torch",
    "torch_geometric.datasets",
    "torch_geometric.loader",
    "torch_geometric.nn",
    "torch_geometric.transforms",
    "remotegnn.loader",
    "remotegnn.link_loader",
)


def run_child(script: str, args: list[str]) -> None:
    """In the forked child: run ``script`` as the main module, then exit with its status. What it
    prints goes to stderr: stdout is the runner's channel, and stdin is not the script's."""
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.argv = [script, *args]
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # as the interpreter's exit does: wait for the script's non-daemon threads
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    for module in WARM:
        importlib.import_module(module)
    # What is imported now is shared by every child, never collected: a child's garbage collections
    # then leave those objects alone instead of touching, and so copying, their pages.
    gc.freeze()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_child(request["script"], request["args"])
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
