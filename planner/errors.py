"""The planner's own errors, on the project's one hierarchy (:mod:`foundation.errors`).

Usage mistakes, unknown names and broken input files are the shared ``UsageError``,
``NotFoundError`` and ``InputFileError``; what only the planner meets is here.
"""

from __future__ import annotations

from foundation.errors import InputFileError, MemoryBridgeError


class SnapshotError(InputFileError):
    """The price snapshot is missing or does not validate (a broken install or a bad --snapshot)."""


class InfeasibleError(MemoryBridgeError):
    """No cluster satisfies the constraints; the message names the cheapest that would and how to fit."""


class PricingSourceError(MemoryBridgeError):
    """A pricing source (AWS API, moto bundle, CSV) could not be read."""
