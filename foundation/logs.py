"""Diagnostics go through stdlib ``logging``; the command lines and MPI ranks show them on stderr.

Library code logs to ``logging.getLogger(__name__)`` and never prints: a training script that
imports the loader keeps its own logging set-up. Every entry point of the project (the console
scripts, and each rank of an MPI job) calls :func:`configure`, through
:func:`foundation.process.start`: it shows records as ``logger: message`` lines on stderr, the
project's own from INFO up, other libraries' (boto3, uvicorn, ...) only from WARNING up, so a
command's output is not buried in their chatter.
"""

from __future__ import annotations

import logging
import sys
from typing import Final

FORMAT: Final = "%(name)s: %(message)s"
PROJECT_LOGGERS: Final = (
    "foundation",
    "contracts",
    "planner",
    "api",
    "provisioning",
    "remotegnn",
    "fullgraph",
    "testbed",
)
_MARK: Final = "_memorybridge"  # set on the handler configure() adds, so a second call adds none


def configure(level: int = logging.INFO) -> None:
    """Show the project's diagnostics from ``level`` up, and other libraries' warnings, on stderr (idempotent)."""
    root = logging.getLogger()
    if any(getattr(handler, _MARK, False) for handler in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    setattr(handler, _MARK, True)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for name in PROJECT_LOGGERS:
        logging.getLogger(name).setLevel(level)
