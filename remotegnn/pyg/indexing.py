"""PyG's index forms as row ids, and the names errors use for groups and attributes."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import torch


def describe(group: Hashable, attr: str) -> str:
    """How an error names a tensor: ``attribute 'x'`` or ``attribute 'x' of group 'paper'``."""
    return f"attribute {attr!r}" + ("" if group is None else f" of group {group!r}")


def is_whole(index) -> bool:
    """Whether an index selects the whole tensor (None, or an empty slice)."""
    return index is None or (isinstance(index, slice) and index == slice(None))


def rows_of(index, num_rows: int, what: str) -> tuple[np.ndarray, bool]:
    """(int64 row ids, whether the index was a single row) for any index PyG passes: None (all
    rows), a slice, an int, or a tensor / array / list of ints (negative ones count from the end,
    as in torch) or of bools (a mask over all rows). Out-of-range rows raise IndexError naming
    ``what``."""
    if index is None:
        return np.arange(num_rows, dtype=np.int64), False
    if isinstance(index, slice):
        return np.arange(*index.indices(num_rows), dtype=np.int64), False
    values = index.detach().cpu().numpy() if isinstance(index, torch.Tensor) else np.asarray(index)
    if values.ndim > 1:
        raise IndexError(f"{what}: a row index must be 1-D, not of shape {list(values.shape)}")
    single = values.ndim == 0
    values = values.reshape(-1)
    if values.dtype == np.bool_ and not single:
        if values.shape != (num_rows,):
            raise IndexError(f"{what}: a boolean mask needs one entry per row ({num_rows:,}), not {len(values):,}")
        return np.flatnonzero(values).astype(np.int64), False
    if values.dtype.kind not in "iu":
        raise IndexError(
            f"{what}: rows are selected by None, a slice, an int, or a 1-D tensor of ints or bools, "
            f"not {type(index).__name__} of {values.dtype}"
        )
    rows = values.astype(np.int64)
    outside = (rows < -num_rows) | (rows >= num_rows)
    if outside.any():
        raise IndexError(
            f"{what}: index {int(rows[outside][0])} is out of range for {num_rows:,} rows "
            f"({int(outside.sum()):,} such indices)"
        )
    negative = rows < 0
    if negative.any():
        rows[negative] += num_rows
    return rows, single
