"""RemoteGNN's own errors, on the project's one hierarchy (:mod:`foundation.errors`).

Every CLI prints them the same way: one line, no traceback, exit 2 for a wrong request and 1
for broken input.
"""

from __future__ import annotations

from foundation.errors import InputFileError


class DatasetError(InputFileError):
    """A RemoteGNN dataset directory is missing, truncated, corrupt or of an unknown version."""


class ConvertError(InputFileError):
    """A source graph cannot be converted: missing files, sizes that disagree, ids out of range."""
