"""Schema names that changed, and how a file that still carries the older name is read.

Every file format names its schema ``memorybridge.<format>`` in its ``kind`` field. Three formats
shared by several packages were first named after one of them (``remotegnn.partition``,
``remotegnn.testbed``, ``remotegnn.testbed-runs``); files written then still load: the older
name is read as the current one, and a file written again carries the current name.
"""

from __future__ import annotations

from pydantic import BeforeValidator


def formerly(older: str, current: str) -> BeforeValidator:
    """A ``kind`` field's validator that reads ``older``, the schema's former name, as ``current``
    (any other value is left for the field's own check to accept or refuse)."""
    return BeforeValidator(lambda kind: current if kind == older else kind)
