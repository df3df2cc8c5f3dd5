"""remotegnn.pinch.fixedpoint: int64 fixed point at 2^-32 that flags instead of wrapping."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from remotegnn.pinch.fixedpoint import (
    MAX_CONTRIBUTIONS,
    Q_MAX,
    SCALE,
    SCALE_BITS,
    X_MAX,
    chunks,
    dequantize,
    quantize,
    sum_error_bound,
    to_records,
)
from remotegnn.pinch.wire import CHUNK, R_SATURATED, RECORD


def random_float32(rng: np.random.Generator, n: int, low_exp: int, high_exp: int) -> np.ndarray:
    """float32 values with random signs, mantissas and exponents in [low_exp, high_exp)."""
    mantissa = rng.uniform(1.0, 2.0, n)
    exponent = rng.integers(low_exp, high_exp, n)
    sign = rng.choice([-1.0, 1.0], n)
    return (sign * np.ldexp(mantissa, exponent)).astype(np.float32)


def test_the_constants_agree():
    assert SCALE == 2.0**SCALE_BITS == 2.0**32
    assert Q_MAX == 2**54 and X_MAX == 4_194_304.0
    assert MAX_CONTRIBUTIONS * Q_MAX == 2**62 < 2**63  # the most a sum can reach: it never wraps


def test_a_float32_of_magnitude_at_least_2_to_the_minus_8_comes_back_bit_exact():
    rng = np.random.default_rng(0)
    edges = np.array([2.0**-8, -(2.0**-8), X_MAX, -X_MAX, 1.0, -1.0, 0.0, -0.0, 3.14159], dtype=np.float32)
    below_max = np.nextafter(np.float32(X_MAX), np.float32(0))
    x = np.concatenate([edges, [below_max, -below_max], random_float32(rng, 100_000, -8, 22)])
    assert np.abs(x).max() <= X_MAX
    q, saturated = quantize(x)
    assert q.dtype == np.int64 and not saturated.any()
    back = dequantize(q)
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back, x.astype(np.float64))  # exact even before the cast back
    assert np.array_equal(back.astype(np.float32).view(np.uint32), np.where(x == 0, 0, x).view(np.uint32))


def test_a_smaller_value_is_within_half_a_step():
    rng = np.random.default_rng(1)
    x = random_float32(rng, 10_000, -60, -8)
    q, saturated = quantize(x)
    assert not saturated.any()
    assert np.abs(dequantize(q) - x.astype(np.float64)).max() <= 2.0 ** -(SCALE_BITS + 1)


@pytest.mark.parametrize("k", [1, 2, 3, 17, 100, MAX_CONTRIBUTIONS])
def test_a_sum_of_k_values_is_within_the_error_bound(k):
    rng = np.random.default_rng(k)
    width = 64
    # Per index, k contributions mixing large, ordinary and tiny magnitudes of both signs.
    large = random_float32(rng, k * width, 10, 22)
    ordinary = random_float32(rng, k * width, -8, 4)
    tiny = random_float32(rng, k * width, -50, -20)
    pick = rng.integers(0, 3, k * width)
    x = np.choose(pick, [large, ordinary, tiny]).reshape(k, width)
    q, saturated = quantize(x)
    assert not saturated.any()
    total = q.sum(axis=0)  # int64: exact, no wrap at these magnitudes
    assert [int(t) for t in total] == [sum(int(v) for v in q[:, j]) for j in range(width)]
    bound = sum_error_bound(k)
    assert bound == k * 2.0**-33
    for j in range(width):
        exact = sum((Fraction(float(v)) for v in x[:, j]), Fraction(0))
        assert abs(Fraction(int(total[j]), 1 << SCALE_BITS) - exact) <= Fraction(bound)
        # and in floats, against the correctly rounded float64 sum of the same inputs
        float_sum = math.fsum(float(v) for v in x[:, j])
        assert abs(float(dequantize(total[j])) - float_sum) <= bound + 2 * math.ulp(float_sum)


def test_values_beyond_the_range_are_clamped_or_zeroed_and_flagged():
    just_over = np.nextafter(np.float32(X_MAX), np.float32(np.inf))
    x = np.array([X_MAX, -X_MAX, just_over, -just_over, 1e9, -1e30, np.inf, -np.inf, np.nan, 5.0], dtype=np.float32)
    q, saturated = quantize(x)
    assert saturated.tolist() == [False, False, True, True, True, True, True, True, True, False]
    assert q.tolist() == [Q_MAX, -Q_MAX, Q_MAX, -Q_MAX, Q_MAX, -Q_MAX, Q_MAX, -Q_MAX, 0, 5 << 32]
    # float64 input beyond float32's range is flagged as well
    q64, sat64 = quantize(np.array([1e200, -1e200, X_MAX + 2.0**-30]))  # 2**-30: float64's step at X_MAX
    assert sat64.all() and q64.tolist() == [Q_MAX, -Q_MAX, Q_MAX]


def test_256_contributions_of_the_largest_value_cannot_wrap():
    signs = np.random.default_rng(2).choice([-1, 1], MAX_CONTRIBUTIONS)
    for column in (np.full(MAX_CONTRIBUTIONS, X_MAX), np.full(MAX_CONTRIBUTIONS, -X_MAX), signs * X_MAX):
        q, saturated = quantize(column)
        assert not saturated.any()
        exact = sum(int(v) for v in q)
        assert int(q.sum(dtype=np.int64)) == exact
        assert abs(exact) <= 2**62
        assert dequantize(np.int64(exact)) == column.sum()
    q, _ = quantize(np.full(MAX_CONTRIBUTIONS, X_MAX))
    assert int(q.sum()) == 2**62


def test_to_records_pads_numbers_and_flags():
    x = np.arange(40, dtype=np.float32).reshape(5, 8) * 0.5
    x[2, 3] = np.inf  # flat index 19: record 1
    recs = to_records(x)
    assert recs.dtype == RECORD and len(recs) == 3 == chunks(40)
    assert recs["index"].tolist() == [0, 1, 2]
    assert recs["flags"].tolist() == [0, R_SATURATED, 0]
    assert recs["pad"].tolist() == [0, 0, 0]
    values = recs["value"].reshape(-1)
    expected, _ = quantize(x.reshape(-1))
    np.testing.assert_array_equal(values[:40], expected)
    assert values[19] == Q_MAX
    assert (values[40:] == 0).all() and len(values) == 3 * CHUNK  # zero-padded
    np.testing.assert_array_equal(dequantize(values[:40]), np.where(np.isinf(x), X_MAX, x).reshape(-1))


def test_to_records_at_a_record_boundary_and_empty():
    exact = to_records(np.ones(2 * CHUNK, dtype=np.float32))
    assert len(exact) == 2 and (exact["value"] == 1 << 32).all() and not exact["flags"].any()
    one = to_records(np.array([-0.25], dtype=np.float32))
    assert len(one) == 1 and one["value"][0].tolist() == [-(1 << 30)] + [0] * (CHUNK - 1)
    nan_last = to_records(np.r_[np.zeros(CHUNK * 2, dtype=np.float32), np.float32(np.nan)])
    assert nan_last["flags"].tolist() == [0, 0, R_SATURATED] and nan_last["value"][2, 0] == 0
    assert len(to_records(np.zeros(0, dtype=np.float32))) == 0
    assert [chunks(n) for n in (0, 1, 16, 17, 32, 33)] == [0, 1, 1, 2, 2, 3]
