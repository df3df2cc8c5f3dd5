"""Float <-> fixed point for in-kernel sums (BPF has no floating point).

A record carries 16 values as int32 mantissas and one shift: value j contributes
``m_j << shift`` to an int64 sum kept at scale 2**-32 (``SCALE_BITS``), so x ~ sum / 2**32. The
receiver adds contributions as integers, which is exact, associative and the same in the kernel
and in user space, then divides by ``2**SCALE_BITS`` (and by the count for a mean).

The sender picks each record's shift as the smallest that fits its largest value in an int32
mantissa (block floating point): 72 bytes a record on the wire, against 64 for the raw float32
values and 136 for plain int64 fixed point. Why these numbers:

- shift 0 is plain 2**-32 fixed point: every value of a record whose largest |x| is below 0.5
  travels as ``round(x * 2**32)``, finer than float32's step for |x| >= 2**-8, so a row that
  crosses alone comes back bit-exact there;
- a larger record keeps 31 bits below its largest value (float32 keeps 24);
- ``MAX_SHIFT = 22`` caps a contribution at 2**53 (|x| < 2,097,152): ``MAX_CONTRIBUTIONS = 256``
  of them add up to less than 2**61, so a sum can never wrap its int64. A value beyond the cap or
  not finite is clamped and its record flagged ``R_SATURATED`` rather than silently wrong; an
  index past 256 contributions is flagged ``R_OVERFLOW`` by the receiver. The int32 * 1e8 scheme
  of earlier in-network aggregation work overflows at |x| > 21.5.

A contribution is within half its record's step, ``2**(shift - SCALE_BITS - 1)``, of the value;
a sum of k unflagged contributions within the sum of those (:func:`sum_error_bound`) of the
exact sum of the inputs.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from fullgraph.exchange.pinch.wire import CHUNK, R_SATURATED, RECORD

SCALE_BITS: Final = 32
SCALE: Final = float(1 << SCALE_BITS)
MANTISSA_MAX: Final = (1 << 31) - 1
MAX_SHIFT: Final = 22
X_MAX: Final = MANTISSA_MAX * 2.0**MAX_SHIFT / SCALE  # just under 2,097,152: the largest that travels unclamped
MAX_CONTRIBUTIONS: Final = 256


def chunks(values: int) -> int:
    """Records a flat vector of ``values`` floats takes."""
    return -(-values // CHUNK)


def to_records(x: np.ndarray) -> np.ndarray:
    """A float vector (any shape, read flat) as FIXED records: record i holds values
    ``[16 i, 16 i + 16)`` (zero-padded) with its shift, index i, and ``R_SATURATED`` where a
    value had to be clamped (too large, or not finite)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    n = chunks(flat.size)
    padded = np.zeros(n * CHUNK, dtype=np.float64)
    padded[: flat.size] = flat
    values = padded.reshape(n, CHUNK)
    bad = ~np.isfinite(values)
    values[bad] = 0.0
    peak = np.abs(values).max(axis=1)
    # The smallest shift whose mantissas hold the record's largest value (one more where
    # rounding reaches past the int32).
    with np.errstate(divide="ignore"):
        need = np.ceil(np.log2(np.maximum(peak, 2.0**-64) * SCALE / MANTISSA_MAX))
    shift = np.clip(need, 0, MAX_SHIFT).astype(np.int64)
    mantissa = np.rint(values * np.exp2(SCALE_BITS - shift)[:, None])
    over = (np.abs(mantissa) > MANTISSA_MAX).any(axis=1) & (shift < MAX_SHIFT)
    shift[over] += 1
    mantissa[over] = np.rint(values[over] * np.exp2(SCALE_BITS - shift[over])[:, None])
    clamped = np.abs(mantissa) > MANTISSA_MAX
    mantissa = np.clip(mantissa, -MANTISSA_MAX, MANTISSA_MAX)
    out = np.zeros(n, dtype=RECORD)
    out["index"] = np.arange(n, dtype=np.uint32)
    out["shift"] = shift
    out["value"] = mantissa.astype(np.int32)
    out["flags"][(bad | clamped).any(axis=1)] = R_SATURATED
    return out


def contributions(records: np.ndarray) -> np.ndarray:
    """What each value of ``records`` adds to its sum: ``mantissa << shift``, int64, (n, CHUNK)."""
    return records["value"].astype(np.int64) << records["shift"].astype(np.int64)[:, None]


def quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What each value of ``x`` (read flat) contributes to a sum as :func:`to_records` encodes
    it, and whether its record was flagged saturated."""
    flat = np.ascontiguousarray(x).reshape(-1)
    recs = to_records(flat)
    saturated = np.repeat(recs["flags"] != 0, CHUNK)[: flat.size]
    return contributions(recs).reshape(-1)[: flat.size], saturated


def dequantize(total: np.ndarray) -> np.ndarray:
    """Summed fixed point back to float64."""
    return np.asarray(total, dtype=np.float64) / SCALE


def sum_error_bound(contributions: int, shift: int = 0) -> float:
    """Largest absolute error of a fixed-point sum of ``contributions`` unflagged values whose
    records had at most ``shift`` (0 for values below 0.5)."""
    return contributions * 2.0 ** (shift - SCALE_BITS - 1)
