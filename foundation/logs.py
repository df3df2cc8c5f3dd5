"""Diagnostics go through stdlib ``logging``; the command lines and MPI ranks show them on stderr.

Library code logs to ``logging.getLogger(__name__)`` and never prints: a training script that
imports the loader keeps its own logging set-up. Every entry point of the project (the console
scripts, and each rank of an MPI job) calls :func:`configure`, which shows records as
``logger: message`` lines on stderr, INFO and above.
"""

from __future__ import annotations

import logging
import sys
from typing import Final

FORMAT: Final = "%(name)s: %(message)s"
_MARK: Final = "_memorybridge"  # set on the handler configure() adds, so a second call adds none


def configure(level: int = logging.INFO) -> None:
    """Show diagnostics on stderr (idempotent)."""
    root = logging.getLogger()
    if any(getattr(handler, _MARK, False) for handler in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    setattr(handler, _MARK, True)
    root.addHandler(handler)
    root.setLevel(level)
