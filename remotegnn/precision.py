"""Wire precision: the dtype feature rows travel in between memory ranks and the learner.

``float32`` (the default) is exact. ``float16`` halves the bytes and keeps 11 significant bits,
with a range of +-65504 (larger values become inf). ``bfloat16`` halves them too and keeps
float32's range with 8 significant bits: it is float32's upper 16 bits, rounded to nearest even.
numpy has no bfloat16, so on the wire and in numpy it is ``uint16``; torch views it as
``torch.bfloat16`` without a copy.

A wire dtype never widens a row: features stored as float16 travel as float16 whatever is asked
(the planner's model prices the same rule).
"""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np

WireDtype = Literal["float32", "float16", "bfloat16"]
WIRE_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
BFLOAT16 = np.dtype(np.uint16)
"""How bfloat16 values are held in numpy arrays and frames (their raw bits)."""
_WIRE_NUMPY: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": BFLOAT16,
}


def wire_numpy_dtype(wire_dtype: str, feature_dtype) -> np.dtype:
    """The numpy dtype rows of ``feature_dtype`` travel as when ``wire_dtype`` is asked for."""
    stored = np.dtype(feature_dtype)
    wanted = _WIRE_NUMPY[wire_dtype]
    return stored if stored.itemsize <= wanted.itemsize else wanted


def wire_name(dtype: np.dtype) -> str:
    """The wire dtype's name for a numpy dtype ``wire_numpy_dtype`` returned."""
    return "bfloat16" if np.dtype(dtype) == BFLOAT16 else str(np.dtype(dtype))


@numba.njit(nogil=True, cache=True)
def _float32_to_bfloat16(bits, out):
    """Round each float32 (as uint32 bits) to bfloat16 bits, to nearest even; NaN stays NaN."""
    for i in range(bits.shape[0]):
        b = bits[i]
        if (b & 0x7FFFFFFF) > 0x7F800000:  # NaN: keep it quiet and a NaN after truncation
            out[i] = np.uint16((b >> 16) | 0x40)
        else:
            out[i] = np.uint16((b + 0x7FFF + ((b >> 16) & 1)) >> 16)


def to_wire(rows: np.ndarray, out: np.ndarray) -> None:
    """Write ``rows`` (the stored dtype) into ``out`` (a wire dtype of the same shape)."""
    if out.dtype == BFLOAT16 and rows.dtype != BFLOAT16:
        source = np.ascontiguousarray(rows, dtype=np.float32).reshape(-1).view(np.uint32)
        _float32_to_bfloat16(source, out.reshape(-1))
    else:
        with np.errstate(over="ignore"):  # beyond float16's range is inf, as documented above
            np.copyto(out, rows, casting="unsafe")  # float32 -> float16 rounds to nearest even
