"""fullgraph.exchange.pinch.fixedpoint: int32 mantissas with a shift per record, summed exactly in int64
at 2^-32, flagged instead of wrapping."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fullgraph.exchange.pinch.fixedpoint import (
    MANTISSA_MAX,
    MAX_CONTRIBUTIONS,
    MAX_SHIFT,
    SCALE,
    SCALE_BITS,
    X_MAX,
    chunks,
    contributions,
    dequantize,
    quantize,
    sum_error_bound,
    to_records,
)
from fullgraph.exchange.pinch.wire import CHUNK, R_SATURATED, RECORD


def random_float32(rng: np.random.Generator, n: int, low_exp: int, high_exp: int) -> np.ndarray:
    """float32 values with random signs, mantissas and exponents in [low_exp, high_exp)."""
    mantissa = rng.uniform(1.0, 2.0, n)
    exponent = rng.integers(low_exp, high_exp, n)
    sign = rng.choice([-1.0, 1.0], n)
    return (sign * np.ldexp(mantissa, exponent)).astype(np.float32)


def test_the_constants_agree():
    assert SCALE == 2.0**SCALE_BITS == 2.0**32
    assert MANTISSA_MAX == 2**31 - 1 and MAX_SHIFT == 22
    assert X_MAX == MANTISSA_MAX * 2.0**MAX_SHIFT / SCALE and 2_097_151 < X_MAX < 2_097_152
    assert MAX_CONTRIBUTIONS * (MANTISSA_MAX << MAX_SHIFT) < 2**61  # the most a sum can reach: it never wraps


def test_a_record_below_one_half_is_plain_2_to_the_minus_32_and_bit_exact_above_2_to_the_minus_8():
    rng = np.random.default_rng(0)
    x = random_float32(rng, 100_000, -8, -1)  # |x| in [2^-8, 0.5)
    recs = to_records(x)
    assert (recs["shift"] == 0).all() and not recs["flags"].any()
    q, saturated = quantize(x)
    assert q.dtype == np.int64 and not saturated.any()
    np.testing.assert_array_equal(q, np.rint(x.astype(np.float64) * SCALE).astype(np.int64))
    back = dequantize(q)
    np.testing.assert_array_equal(back, x.astype(np.float64))  # exact even before the cast back


def test_a_larger_record_keeps_31_bits_below_its_largest_value():
    rng = np.random.default_rng(1)
    for peak_exp in (0, 5, 13, 20):  # records whose largest |x| is at least 0.5
        x = random_float32(rng, 16 * 500, peak_exp - 30, peak_exp)
        x[::CHUNK] = np.float32(2.0**peak_exp)  # every record's largest
        recs = to_records(x)
        assert (np.abs(recs["value"]) <= MANTISSA_MAX).all() and not recs["flags"].any()
        q, _ = quantize(x)
        step = np.repeat(np.exp2(recs["shift"].astype(float) - SCALE_BITS), CHUNK)[: x.size]
        err = np.abs(dequantize(q) - x.astype(np.float64))
        assert (err <= step / 2).all()
        # values within 2^7 of their record's largest are float32-exact (24 of the 31 bits)
        peak = np.repeat(np.abs(x.reshape(-1, CHUNK)).max(axis=1), CHUNK)
        near = np.abs(x) >= peak * 2.0**-7
        assert near.any() and (err[near] == 0).all()


def test_the_shift_is_the_smallest_that_fits_even_where_rounding_reaches_2_to_the_31():
    at_half = to_records(np.array([0.5 - 2.0**-40]))  # rounds to 2^31 at shift 0: needs 1
    assert at_half["shift"][0] == 1 and abs(int(at_half["value"][0, 0])) <= MANTISSA_MAX
    below = to_records(np.array([0.25]))
    assert below["shift"][0] == 0 and below["value"][0, 0] == 1 << 30
    assert to_records(np.array([1.0]))["shift"][0] == 2
    assert to_records(np.zeros(3))["shift"][0] == 0


@pytest.mark.parametrize("k", [1, 2, 3, 17, 100, MAX_CONTRIBUTIONS])
def test_a_sum_of_k_values_is_within_the_error_bound(k):
    rng = np.random.default_rng(k)
    width = CHUNK  # one record per contribution
    large = random_float32(rng, k * width, 10, 20)
    ordinary = random_float32(rng, k * width, -8, 4)
    tiny = random_float32(rng, k * width, -50, -20)
    pick = rng.integers(0, 3, k * width)
    x = np.choose(pick, [large, ordinary, tiny]).reshape(k, width)
    recs = [to_records(row) for row in x]
    q = np.stack([contributions(r)[0] for r in recs])
    assert not any(r["flags"].any() for r in recs)
    total = q.sum(axis=0)
    assert [int(t) for t in total] == [sum(int(v) for v in q[:, j]) for j in range(width)]
    bound = sum(sum_error_bound(1, int(r["shift"][0])) for r in recs)
    assert sum_error_bound(k) == k * 2.0**-33
    for j in range(width):
        exact = sum((Fraction(float(v)) for v in x[:, j]), Fraction(0))
        assert abs(Fraction(int(total[j]), 1 << SCALE_BITS) - exact) <= Fraction(bound)
        float_sum = math.fsum(float(v) for v in x[:, j])
        assert abs(float(dequantize(total[j])) - float_sum) <= bound + 2 * math.ulp(float_sum)


def test_values_beyond_the_range_are_clamped_or_zeroed_and_flagged():
    x = np.array([X_MAX * 0.999, 1e9, -1e30, np.inf, -np.inf, np.nan, 5.0], dtype=np.float64)
    for value, flagged in zip(x, [False, True, True, True, True, True, False]):
        recs = to_records(np.array([value]))
        assert bool(recs["flags"][0] & R_SATURATED) == flagged
        assert abs(int(recs["value"][0, 0])) <= MANTISSA_MAX and recs["shift"][0] <= MAX_SHIFT
    big = to_records(np.array([1e9, -1e9]))
    assert big["value"][0, :2].tolist() == [MANTISSA_MAX, -MANTISSA_MAX] and big["shift"][0] == MAX_SHIFT
    assert to_records(np.array([np.nan]))["value"][0, 0] == 0
    q, saturated = quantize(np.array([1.0, np.inf]))
    assert saturated.tolist() == [True, True]  # a record is flagged whole
    assert q[0] == 1 << 32  # its finite value still travels exactly


def test_256_contributions_of_the_largest_value_cannot_wrap():
    signs = np.random.default_rng(2).choice([-1, 1], MAX_CONTRIBUTIONS)
    for column in (np.full(MAX_CONTRIBUTIONS, X_MAX), np.full(MAX_CONTRIBUTIONS, -X_MAX), signs * X_MAX):
        q, saturated = quantize(column[:, None] * np.ones((1, CHUNK)))
        assert not saturated.any()
        per_row = q.reshape(MAX_CONTRIBUTIONS, CHUNK)[:, 0]
        exact = sum(int(v) for v in per_row)
        assert int(per_row.sum(dtype=np.int64)) == exact and abs(exact) < 2**61


def test_to_records_pads_numbers_and_flags():
    x = np.arange(40, dtype=np.float32).reshape(5, 8) * 0.5
    x[2, 3] = np.inf  # flat index 19: record 1
    recs = to_records(x)
    assert recs.dtype == RECORD and RECORD.itemsize == 72 and len(recs) == 3 == chunks(40)
    assert recs["index"].tolist() == [0, 1, 2]
    assert recs["flags"].tolist() == [0, R_SATURATED, 0]
    assert recs["pad"].tolist() == [0, 0, 0]
    back = dequantize(contributions(recs).reshape(-1))
    finite = np.isfinite(x.reshape(-1))
    np.testing.assert_array_equal(back[:40][finite], x.reshape(-1)[finite])  # halves are exact
    assert (contributions(recs).reshape(-1)[40:] == 0).all()  # zero-padded


def test_to_records_at_a_record_boundary_and_empty():
    ones = to_records(np.ones(2 * CHUNK, dtype=np.float32))
    assert len(ones) == 2 and (contributions(ones) == 1 << 32).all() and not ones["flags"].any()
    nan_last = to_records(np.r_[np.zeros(CHUNK * 2, dtype=np.float32), np.float32(np.nan)])
    assert nan_last["flags"].tolist() == [0, 0, R_SATURATED] and nan_last["value"][2, 0] == 0
    assert len(to_records(np.zeros(0, dtype=np.float32))) == 0
    assert [chunks(n) for n in (0, 1, 16, 17, 32, 33)] == [0, 1, 1, 2, 2, 3]
