"""The paper's Algorithm 1 and sliced datasets on disk."""

from __future__ import annotations

import numpy as np
import pytest

from foundation.errors import UsageError
from fullgraph.slicegcn.slicing import open_slices, part_dir, slice_plan, write_slices
from remotegnn.store import GraphDataset


@pytest.mark.parametrize(
    ("dim", "parts", "expected"),
    [
        (10, 2, [(0, 5), (5, 10)]),
        (10, 3, [(0, 4), (4, 8), (6, 10)]),  # the last slice is moved left: it overlaps, not shrinks
        (10, 4, [(0, 3), (3, 6), (6, 9), (7, 10)]),
        (7, 7, [(i, i + 1) for i in range(7)]),
        (1433, 3, [(0, 478), (478, 956), (955, 1433)]),
    ],
)
def test_algorithm_1_gives_equal_widths_and_overlaps_the_last_slice(dim, parts, expected):
    plan = slice_plan(dim, parts)
    assert plan == expected
    assert {end - start for start, end in plan} == {-(-dim // parts)}
    assert plan[0][0] == 0 and plan[-1][1] == dim
    covered = np.zeros(dim, dtype=bool)
    for start, end in plan:
        covered[start:end] = True
    assert covered.all()


def test_the_scale_factor_widens_each_slice_as_algorithm_1_does():
    assert slice_plan(12, 3, scale=1.5) == [(0, 6), (4, 10), (6, 12)]


@pytest.mark.parametrize(("dim", "parts", "message"), [(10, 0, "at least 1"), (4, 5, "at most 4")])
def test_impossible_slicings_name_the_fix(dim, parts, message):
    with pytest.raises(UsageError, match=message):
        slice_plan(dim, parts)


def test_each_part_holds_the_whole_graph_and_its_columns(graph, tmp_path):
    slices = write_slices(graph, tmp_path / "sliced", 3)
    assert slices.columns == slice_plan(10, 3) and open_slices(tmp_path / "sliced") == slices
    for index, (start, end) in enumerate(slices.columns):
        part = GraphDataset.open(part_dir(tmp_path / "sliced", index), verify=True)
        assert part.meta.feature_dim == end - start
        assert np.array_equal(part.features, graph.features[:, start:end])
        for role in ("csc/indptr", "csc/indices", "csr/indices", "labels", "splits/train"):
            assert part.meta.files[role].blake2b == graph.meta.files[role].blake2b, role
    with pytest.raises(UsageError, match="exists"):
        write_slices(graph, tmp_path / "sliced", 2)
