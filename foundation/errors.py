"""The project's one exception hierarchy.

Every error a user can cause or meet is a :class:`MemoryBridgeError`: it carries a message they
can act on and the exit code every CLI uses (2: the request itself is wrong; 1: the request is
fine but cannot be met, or an input file is broken). CLIs print it as one line without a
traceback and the REST API maps it to a status; packages subclass these for their own cases.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pydantic import ValidationError

EXIT_CANNOT_MEET = 1
EXIT_USAGE = 2
SUGGESTIONS = 3  # close matches offered for an unknown name
SUGGESTION_CUTOFF = 0.5  # difflib similarity below which a name is no suggestion
LISTED_KNOWN = 12  # up to this many known names are listed in full; more are only counted
VALIDATION_ERRORS_SHOWN = 5  # pydantic errors spelled out in a one-line message


class MemoryBridgeError(Exception):
    """Base class: a problem the user can fix from the message alone."""

    exit_code = EXIT_CANNOT_MEET


class UsageError(MemoryBridgeError):
    """The request is malformed: a nonsensical number, an unknown name, a bad combination."""

    exit_code = EXIT_USAGE


class NotFoundError(UsageError):
    """An unknown name (dataset, instance type, family, format); the message suggests close matches."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        known = sorted(set(known))
        self.kind, self.name, self.known = kind, name, known
        self.suggestions = difflib.get_close_matches(name, known, n=SUGGESTIONS, cutoff=SUGGESTION_CUTOFF)
        hint = f" Did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        listing = ", ".join(known) if len(known) <= LISTED_KNOWN else f"{len(known)} known; see the listing command"
        super().__init__(f"unknown {kind} {name!r}.{hint} Known: {listing}.")


class InputFileError(MemoryBridgeError):
    """A file the user pointed at (profile, plan, state, dataset meta, price table) is unreadable or invalid."""


class DiskFullError(InputFileError):
    """The disk an output was being written to filled up; what was written has been removed.
    ``reason`` is the system's word for it (no space left, or a quota reached)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def format_validation_error(exc: ValidationError, limit: int = VALIDATION_ERRORS_SHOWN) -> str:
    """The first few pydantic errors as 'field.path: reason' pairs, for one-line messages."""
    errors = exc.errors()
    parts = []
    for err in errors[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "(document)"
        parts.append(f"{where}: {err['msg']}")
    more = len(errors) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
