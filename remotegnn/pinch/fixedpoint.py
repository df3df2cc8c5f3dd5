"""Float <-> int64 fixed point for in-kernel sums (BPF has no floating point).

A value x travels as ``q = round(x * 2**SCALE_BITS)`` in an int64, clamped to ``|q| <= Q_MAX``.
The receiver adds the q's of one index as integers, which is exact, associative and the same in
the kernel and in user space, then divides by ``2**SCALE_BITS`` (and by the count for a mean).

Why these numbers: 2**-32 resolves far below float32's step for |x| >= 2**-8 (so a single
value comes back bit-exact), and ``Q_MAX = 2**54`` (|x| <= 4,194,304) lets
``MAX_CONTRIBUTIONS = 256`` contributions add up to at most 2**62: the sum can never wrap. A
clamped or non-finite value is flagged (``R_SATURATED``) rather than silently wrong, and an
index past 256 contributions is flagged ``R_OVERFLOW`` by the receiver. The int32 * 1e8 scheme
of earlier in-network aggregation work overflows at |x| > 21.5.

The error of a sum of k unflagged contributions, against the exact sum of the same inputs,
is at most ``k * 2**-(SCALE_BITS + 1)`` (:func:`sum_error_bound`).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from remotegnn.pinch.wire import CHUNK, R_SATURATED, RECORD

SCALE_BITS: Final = 32
SCALE: Final = float(1 << SCALE_BITS)
Q_MAX: Final = 1 << 54
X_MAX: Final = Q_MAX / SCALE  # 4,194,304.0: the largest magnitude that travels unclamped
MAX_CONTRIBUTIONS: Final = 256


def quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x`` as int64 fixed point, and where it had to be clamped (too large or not finite)."""
    y = np.rint(np.asarray(x, dtype=np.float64) * SCALE)
    saturated = ~(np.abs(y) <= Q_MAX)  # NaN compares false: flagged too
    y = np.clip(np.nan_to_num(y, nan=0.0), -Q_MAX, Q_MAX)
    return y.astype(np.int64), saturated


def dequantize(total: np.ndarray) -> np.ndarray:
    """Summed fixed point back to float64."""
    return np.asarray(total, dtype=np.float64) / SCALE


def sum_error_bound(contributions: int) -> float:
    """Largest absolute error of a fixed-point sum of ``contributions`` unflagged values."""
    return contributions * 2.0 ** -(SCALE_BITS + 1)


def chunks(values: int) -> int:
    """Records a flat vector of ``values`` floats takes."""
    return -(-values // CHUNK)


def to_records(x: np.ndarray) -> np.ndarray:
    """A float vector (any shape, read flat) as FIXED records: record i holds values
    ``[16 i, 16 i + 16)`` (zero-padded), index i, and ``R_SATURATED`` where any was clamped."""
    flat = np.ascontiguousarray(x).reshape(-1)
    n = chunks(flat.size)
    q, saturated = quantize(flat)
    out = np.zeros(n, dtype=RECORD)
    out["index"] = np.arange(n, dtype=np.uint32)
    padded = np.zeros(n * CHUNK, dtype=np.int64)
    padded[: flat.size] = q
    out["value"] = padded.reshape(n, CHUNK)
    if saturated.any():
        hit = np.zeros(n * CHUNK, dtype=bool)
        hit[: flat.size] = saturated
        out["flags"][hit.reshape(n, CHUNK).any(axis=1)] = R_SATURATED
    return out
