"""The bounded-memory structure builder gives exactly what sorting the whole edge list in RAM
gives, for every edge policy, however small its memory and however the edges are chunked."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from remotegnn.errors import ConvertError
from remotegnn.store.build import BYTES_PER_RECORD_SORTED, EdgeStream, build_graph
from remotegnn.store.graph import EdgePolicy


def reference(src, dst, num_nodes, policy):
    """The policy applied to the whole list in RAM, as the format defines it: loops dropped or kept,
    the first of each (un)ordered pair kept, undirected graphs' reversed copies after the kept edges;
    edge id = position in that list; each node's edges in edge-id order."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if policy.self_loops == "drop":
        keep = src != dst
        src, dst = src[keep], dst[keep]
    keys = np.minimum(src, dst) * num_nodes + np.maximum(src, dst) if policy.undirected else src * num_nodes + dst
    if policy.duplicates == "drop":
        _, first = np.unique(keys, return_index=True)
        first.sort()
        src, dst = src[first], dst[first]
    if policy.undirected:
        other = src != dst
        src, dst = np.concatenate([src, dst[other]]), np.concatenate([dst, src[other]])
    layouts = {}
    for name, major, minor in (("csc", dst, src), ("csr", src, dst)):
        order = np.argsort(major, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=num_nodes))])
        layouts[name] = (indptr, minor[order], order)
    return layouts


def built(tmp_path, src, dst, num_nodes, policy, memory, chunk):
    def chunks():
        for start in range(0, len(src), chunk):
            yield src[start : start + chunk], dst[start : start + chunk]

    result = build_graph(EdgeStream(len(src), chunks), num_nodes, policy, tmp_path, memory=memory, progress=False)
    arrays = {
        name: tuple(np.load(tmp_path / name / f"{part}.npy") for part in ("indptr", "indices", "eid"))
        for name in ("csc", "csr")
    }
    return result, arrays, np.load(tmp_path / "degree.npy")


POLICIES = [
    EdgePolicy(self_loops=loops, duplicates=dups, undirected=undirected)
    for loops, dups, undirected in itertools.product(("drop", "keep"), ("drop", "keep"), (False, True))
]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: f"{p.self_loops}-{p.duplicates}-{p.undirected}")
@pytest.mark.parametrize("memory, chunk", [(1 << 20, 1000), (BYTES_PER_RECORD_SORTED * 40, 97)])
def test_matches_the_in_memory_sort(tmp_path, policy, memory, chunk):
    rng = np.random.default_rng(7)
    num_nodes = 300
    # a hub (node 3) so that a range holds more records than fit, plus loops and repeated pairs
    src = np.concatenate([rng.integers(0, num_nodes, 4000), np.full(200, 3), [5, 5, 9, 9]])
    dst = np.concatenate([rng.integers(0, num_nodes, 4000), rng.integers(0, num_nodes, 200), [5, 5, 8, 8]])
    result, arrays, degree = built(tmp_path, src, dst, num_nodes, policy, memory, chunk)
    expected = reference(src, dst, num_nodes, policy)
    for name in ("csc", "csr"):
        for got, want in zip(arrays[name], expected[name], strict=True):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(degree, np.diff(expected["csc"][0]))
    assert result.report.stored == len(expected["csc"][1])
    loops = int((src == dst).sum())
    assert result.report.self_loops_dropped == (loops if policy.self_loops == "drop" else 0)
    kept_given = len(src) - result.report.self_loops_dropped - result.report.duplicates_dropped
    assert result.report.stored == kept_given + (kept_given - _kept_loops(src, dst, policy) if policy.undirected else 0)
    assert not any(p.name.startswith(".build.") for p in tmp_path.iterdir()), "temporary files left behind"


def _kept_loops(src, dst, policy):
    if policy.self_loops == "drop":
        return 0
    loops = src[src == dst]
    return len(np.unique(loops)) if policy.duplicates == "drop" else len(loops)


def test_index_dtype_is_int32_for_small_graphs(tmp_path):
    result, arrays, _ = built(tmp_path, np.array([0, 1]), np.array([1, 0]), 2, EdgePolicy(), 1 << 20, 10)
    assert result.index_dtype == "int32" and arrays["csc"][1].dtype == np.int32


@pytest.mark.parametrize(
    "policy, src, dst, message",
    [
        (EdgePolicy(), [0, 1, 7], [1, 2, 0], r"row 2 of edges.csv: source node id 7 is outside \[0, 4\)"),
        (EdgePolicy(), [0, 1, 2], [1, -1, 0], r"row 1 of edges.csv: target node id -1 is outside \[0, 4\)"),
        (EdgePolicy(self_loops="error"), [0, 2, 1], [1, 2, 0], "row 1 of edges.csv is a self loop on node 2"),
        (EdgePolicy(duplicates="error"), [0, 1, 0], [1, 2, 1], r"edge \(0, 1\) appears more than once"),
        (EdgePolicy(duplicates="error", undirected=True), [0, 1], [1, 0], r"appears more than once"),
    ],
)
def test_bad_edges_are_named_and_nothing_is_left(tmp_path, policy, src, dst, message):
    stream = EdgeStream(len(src), lambda: iter([(np.array(src), np.array(dst))]), lambda i: f"row {i} of edges.csv")
    with pytest.raises(ConvertError, match=message):
        build_graph(stream, 4, policy, tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == [] or all(not p.name.startswith(".build.") for p in tmp_path.iterdir())


def test_a_stream_shorter_or_longer_than_announced_is_refused(tmp_path):
    pair = (np.array([0, 1]), np.array([1, 0]))
    with pytest.raises(ConvertError, match="end after 2 of the 3 announced"):
        build_graph(EdgeStream(3, lambda: iter([pair])), 2, EdgePolicy(), tmp_path, progress=False)
    with pytest.raises(ConvertError, match="more edges than the 1 announced"):
        build_graph(EdgeStream(1, lambda: iter([pair])), 2, EdgePolicy(), tmp_path, progress=False)


def test_float_ids_are_refused(tmp_path):
    stream = EdgeStream(1, lambda: iter([(np.array([0.5]), np.array([1.0]))]))
    with pytest.raises(ConvertError, match="must be integers"):
        build_graph(stream, 2, EdgePolicy(), tmp_path, progress=False)
