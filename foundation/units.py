"""Units, named once, and how a duration or a sum of money reads to a person.

Prices are per hour and times in seconds; memory is counted in GiB (what an instance's RAM is
sold in) and data in bytes.

Figures are shown to ``SIGNIFICANT_DIGITS`` significant digits, never as a bare '0': a plan for a
small graph costs a fraction of a cent and takes seconds, and plans that differ only there must
still read differently ('$0.00368', '4.21 s', '310 ms'), while a large one reads as usual
('$1,234.57', '3.21 h'). JSON documents keep every figure unrounded; only what people read is.
"""

from __future__ import annotations

import math
from typing import Final

SECONDS_PER_MINUTE: Final = 60.0
SECONDS_PER_HOUR: Final = 3600.0
MILLISECONDS_PER_SECOND: Final = 1000.0
GIB: Final = 2**30  # bytes in a gibibyte
FLOAT32_BYTES: Final = 4  # bytes of a float32 value (features, activations and parameters as trained)
FLOAT16_BYTES: Final = 2  # bytes of a float16 or bfloat16 value
SHOWN_IN_MILLISECONDS_BELOW_S: Final = 1.0
SHOWN_IN_SECONDS_BELOW_S: Final = 2 * SECONDS_PER_MINUTE
SHOWN_IN_MINUTES_BELOW_S: Final = 2 * SECONDS_PER_HOUR
SIGNIFICANT_DIGITS: Final = 3  # enough to tell apart plans whose costs differ by a few percent
CENT_DECIMALS: Final = 2  # money is never shown coarser than to the cent


def hours(seconds: float) -> float:
    return seconds / SECONDS_PER_HOUR


def significant(value: float, digits: int = SIGNIFICANT_DIGITS, min_decimals: int = 0) -> str:
    """``value`` to ``digits`` significant digits without an exponent: '0.00368', '25.3', '1,234'.

    Whole numbers keep all their digits (1,234, not 1,230: no one reads a rounded integer part
    as more precise), and at least ``min_decimals`` decimals are shown.
    """
    rounded = float(f"{value:.{digits}g}")
    if rounded == 0 or not math.isfinite(rounded):
        decimals = min_decimals
    else:
        decimals = max(min_decimals, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{value:,.{decimals}f}"


def usd(value: float) -> str:
    """Dollars to three significant digits and at least to the cent: '$0.00368', '$0.412', '$4.21', '$1,234.57'."""
    return f"${significant(value, min_decimals=CENT_DECIMALS)}"


def duration(seconds: float) -> str:
    """Seconds as a person reads them, to three significant digits: '310 ms', '4.21 s', '12.5 min' or '3.21 h'.

    The unit is the one the rounded figure falls in, so 0.9996 s reads '1.00 s', not '1,000 ms'.
    """
    shown = float(f"{seconds:.{SIGNIFICANT_DIGITS}g}")
    if shown == 0:
        return "0 s"
    if shown < SHOWN_IN_MILLISECONDS_BELOW_S:
        return f"{significant(seconds * MILLISECONDS_PER_SECOND)} ms"
    if shown < SHOWN_IN_SECONDS_BELOW_S:
        return f"{significant(seconds)} s"
    if shown < SHOWN_IN_MINUTES_BELOW_S:
        return f"{significant(seconds / SECONDS_PER_MINUTE)} min"
    return f"{significant(hours(seconds))} h"
