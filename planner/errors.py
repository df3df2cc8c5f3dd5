"""The planner's exception hierarchy.

Every error a user can cause or meet carries a message they can act on and the exit code the
CLI uses (2: the request itself is wrong; 1: the request is fine but cannot be satisfied or an
input file is broken), so the CLI and the API print them without a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pydantic import ValidationError


class PlannerError(Exception):
    """Base class: a problem the user can fix from the message alone."""

    exit_code = 1


class UsageError(PlannerError):
    """The request is malformed: a nonsensical number, an unknown name, a bad combination."""

    exit_code = 2


class NotFoundError(UsageError):
    """An unknown name (dataset, instance type, family); the message suggests close matches."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        known = sorted(set(known))
        self.kind, self.name, self.known = kind, name, known
        self.suggestions = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        listing = ", ".join(known) if len(known) <= 12 else f"{len(known)} known; see the listing command"
        super().__init__(f"unknown {kind} {name!r}.{hint} Known: {listing}.")


class InputFileError(PlannerError):
    """A file the user pointed at (profile, plan, calibration, price table) is unreadable or invalid."""


class SnapshotError(PlannerError):
    """The price snapshot is missing or does not validate (a broken install or a bad --snapshot)."""


class InfeasibleError(PlannerError):
    """No cluster satisfies the constraints; the message names the cheapest that would and how to fit."""


class PricingSourceError(PlannerError):
    """A pricing source (AWS API, moto bundle, CSV) could not be read."""


def format_validation_error(exc: ValidationError, limit: int = 5) -> str:
    """The first few pydantic errors as 'field.path: reason' pairs, for one-line messages."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "(document)"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
