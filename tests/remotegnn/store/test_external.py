"""The out-of-core building blocks give what numpy gives on whole arrays, in any budget, and
refuse an order that is not one."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn.errors import DatasetError
from remotegnn.store.external import SORT_BYTES_PER_RECORD, Scratch, invert, sort_by_key, spans


def chunked(values: np.ndarray, keys: np.ndarray, step: int):
    def chunks():
        for start, stop in spans(len(values), step):
            yield values[start:stop], keys[start:stop]

    return chunks


@pytest.mark.parametrize("memory", [SORT_BYTES_PER_RECORD * 50, 1 << 20])
def test_a_sort_by_key_is_numpys_stable_argsort(tmp_path, memory):
    rng = np.random.default_rng(0)
    n = 20_000
    # One key held by half the values (a group of its own, larger than a block), many rare ones.
    keys = np.where(rng.random(n) < 0.5, 7, rng.integers(-500, 500, n))
    values = rng.permutation(n)
    sort_by_key(chunked(values, keys, 1234), n, tmp_path / "out.npy", Scratch(tmp_path, memory))
    assert np.array_equal(np.load(tmp_path / "out.npy"), values[np.argsort(keys, kind="stable")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy"]  # the spill files are gone


@pytest.mark.parametrize("memory", [64, 1 << 20])
def test_the_inverse_of_an_order(tmp_path, memory):
    order = np.random.default_rng(1).permutation(5000)
    np.save(tmp_path / "order.npy", order)
    invert(tmp_path / "order.npy", tmp_path / "rank.npy", Scratch(tmp_path, memory), "the order")
    rank = np.load(tmp_path / "rank.npy")
    assert np.array_equal(rank[order], np.arange(5000))


@pytest.mark.parametrize(
    "replacement, message", [(0, "repeats node ids"), (5000, "holds ids outside")], ids=["repeated", "out-of-range"]
)
def test_an_order_that_is_not_a_permutation_is_refused(tmp_path, replacement, message):
    order = np.random.default_rng(2).permutation(5000)
    np.save(tmp_path / "order.npy", np.where(order == 3, replacement, order))
    with pytest.raises(DatasetError, match=f"the order {message}"):
        invert(tmp_path / "order.npy", tmp_path / "rank.npy", Scratch(tmp_path, 4096), "the order")
