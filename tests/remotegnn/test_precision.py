"""Wire precision: the conversions are the standard roundings, the learner widens them back exactly,
and a wire dtype never widens."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from remotegnn.learner.device_cache import as_tensor
from remotegnn.precision import BFLOAT16, to_wire, wire_name, wire_numpy_dtype

EDGES = np.array(
    [0.0, -0.0, 1.0, -1.5, 1e-40, -1e-45, 3.4e38, -3.4e38, np.inf, -np.inf, 65504.0, 65520.0, 1 + 2**-8, 1 + 3 * 2**-8],
    dtype=np.float32,
)


def _widened(wire: np.ndarray) -> np.ndarray:
    """Wire rows as float32, as the learner widens them (its tensor view of the bits, then ``float``)."""
    return as_tensor(wire).float().numpy()


def _values() -> np.ndarray:
    rng = np.random.default_rng(0)
    random = (rng.standard_normal(10_000) * 10.0 ** rng.integers(-30, 30, 10_000)).astype(np.float32)
    return np.concatenate([EDGES, random]).reshape(-1, 2)


def test_bfloat16_rounds_to_nearest_even_as_torch_does():
    values = _values()
    out = np.empty(values.shape, dtype=BFLOAT16)
    to_wire(values, out)
    expected = torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(out, expected)
    assert np.array_equal(_widened(out), torch.from_numpy(values).to(torch.bfloat16).float().numpy())


def test_bfloat16_keeps_nan_a_nan():
    values = np.array([[np.nan, -np.nan, np.float32(np.uint32(0x7F800001).view(np.float32))]], dtype=np.float32)
    out = np.empty(values.shape, dtype=BFLOAT16)
    to_wire(values, out)
    assert np.isnan(_widened(out)).all()  # a truncated signalling NaN would have become inf


def test_float16_is_numpys_rounding_and_widens_back_exactly():
    values = _values()
    out = np.empty(values.shape, dtype=np.float16)
    to_wire(values, out)
    with np.errstate(over="ignore"):
        assert np.array_equal(out, values.astype(np.float16), equal_nan=True)
    assert np.array_equal(_widened(out), out.astype(np.float32), equal_nan=True)
    assert out.reshape(-1)[10] == 65504 and np.isinf(out.reshape(-1)[11])  # 65520 rounds past float16's range


@pytest.mark.parametrize(
    ("asked", "stored", "sent"),
    [
        ("float32", "float32", "float32"),
        ("float16", "float32", "float16"),
        ("bfloat16", "float32", "bfloat16"),
        ("float32", "float16", "float16"),  # never widened
        ("bfloat16", "float16", "float16"),  # same width: the stored precision is kept
    ],
)
def test_a_wire_dtype_never_widens_a_row(asked, stored, sent):
    assert wire_name(wire_numpy_dtype(asked, stored)) == sent
