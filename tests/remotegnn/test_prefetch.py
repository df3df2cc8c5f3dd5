"""The prefetch hint compiles for every array kind the kernels use and changes no value."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from remotegnn.prefetch import CACHE_LINE_BYTES, line_elements, prefetch, prefetch_row


@numba.njit
def _sum_with_hints(values, ahead):
    total = 0.0
    n = values.shape[0]
    for i in range(n):
        if i + ahead < n:
            prefetch(values, i + ahead)
        total += values[i]
    return total


@numba.njit
def _rows_with_hints(rows):
    out = np.empty_like(rows)
    for r in range(rows.shape[0] - 1, -1, -1):
        prefetch_row(rows, r)
        out[r] = rows[r]
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.int8])
def test_a_hinted_loop_computes_what_an_unhinted_one_does(dtype):
    values = np.arange(1000).astype(dtype)
    assert _sum_with_hints(values, 16) == values.astype(np.float64).sum()


@pytest.mark.parametrize("width", [1, 3, CACHE_LINE_BYTES // 4, 128, 129])
def test_prefetching_a_row_leaves_rows_of_any_width_unchanged(width):
    rows = np.random.default_rng(0).random((7, width)).astype(np.float32)
    assert np.array_equal(_rows_with_hints(rows), rows)


@numba.njit
def _compiled_line_elements(values):
    return line_elements(values)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float32, np.int64, np.complex128])
def test_elements_per_line_are_the_same_compiled_and_in_python(dtype):
    values = np.zeros((2, 3), dtype=dtype)
    expected = CACHE_LINE_BYTES // np.dtype(dtype).itemsize
    assert line_elements(values) == expected
    assert _compiled_line_elements(values) == expected


def test_only_arrays_and_integer_offsets_are_accepted():
    @numba.njit
    def hint_a_float_offset(values):
        prefetch(values, 1.5)

    with pytest.raises(numba.core.errors.TypingError):
        hint_a_float_offset(np.zeros(4))
