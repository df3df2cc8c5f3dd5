"""Units, named once, and how a duration reads to a person.

Prices are per hour and times in seconds; memory is counted in GiB (what an instance's RAM is
sold in) and data in bytes.
"""

from __future__ import annotations

from typing import Final

SECONDS_PER_MINUTE: Final = 60.0
SECONDS_PER_HOUR: Final = 3600.0
GIB: Final = 2**30  # bytes in a gibibyte
SHOWN_IN_SECONDS_BELOW_S: Final = 2 * SECONDS_PER_MINUTE
SHOWN_IN_MINUTES_BELOW_S: Final = 2 * SECONDS_PER_HOUR


def hours(seconds: float) -> float:
    return seconds / SECONDS_PER_HOUR


def duration(seconds: float) -> str:
    """Seconds as a person reads them: '95 s', '12.5 min' or '3.2 h'."""
    if seconds < SHOWN_IN_SECONDS_BELOW_S:
        return f"{seconds:.0f} s"
    if seconds < SHOWN_IN_MINUTES_BELOW_S:
        return f"{seconds / SECONDS_PER_MINUTE:.1f} min"
    return f"{hours(seconds):.1f} h"
