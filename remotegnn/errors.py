"""RemoteGNN's user-facing errors.

They extend the planner's hierarchy so every CLI in the project prints them the same way: one
line, no traceback, exit 2 for a wrong request and 1 for broken input.
"""

from __future__ import annotations

from planner.errors import InputFileError, PlannerError, UsageError

__all__ = ["PlannerError", "UsageError", "DatasetError", "ConvertError"]


class DatasetError(InputFileError):
    """A RemoteGNN dataset directory is missing, truncated, corrupt or of an unknown version."""


class ConvertError(InputFileError):
    """A source graph cannot be converted: missing files, sizes that disagree, ids out of range."""
