"""``DatasetSource`` serves a reordered dataset in the user's node ids: rows, samples and the
structure in every layout are the original dataset's."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn.pyg.dataset import DatasetSource


@pytest.fixture(scope="module")
def sources(rmat, rmat_reordered) -> tuple[DatasetSource, DatasetSource]:
    return DatasetSource(rmat.path, cache_bytes=200 * rmat.meta.row_bytes), DatasetSource(
        rmat_reordered.path, cache_bytes=200 * rmat.meta.row_bytes
    )


def test_rows_are_read_by_the_users_ids(sources):
    original, reordered = sources
    rows = np.random.default_rng(0).choice(4096, 300, replace=False)
    for attr in ("x", "y"):
        assert np.array_equal(reordered.read(attr, rows), original.read(attr, rows))


def test_samples_come_back_in_the_users_ids(sources):
    original, reordered = sources
    seeds = np.arange(0, 4096, 37)
    mine, theirs = (source.sample(seeds, [4, 3], False, (5, 0, 1)) for source in sources)
    assert np.array_equal(theirs.n_id, mine.n_id)
    assert np.array_equal(theirs.edge_index, mine.edge_index) and np.array_equal(theirs.e_id, mine.e_id)


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_the_structure_is_the_original_in_every_layout(sources, layout):
    original, reordered = sources
    for mine, theirs in zip(original.edges(layout), reordered.edges(layout), strict=True):
        assert np.array_equal(theirs, mine)
