"""Locality orders: each is a permutation with the property it is named for, and the ones meant
to bring neighbours together do so on a power-law graph with random ids."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from remotegnn.convert.pyg import from_pyg
from remotegnn.store import GraphDataset
from remotegnn.store.external import Scratch
from remotegnn.store.orders import ORDERS, node_order
from tests.remotegnn.conftest import write_dataset
from tests.remotegnn.test_hetero import graph


def order_of(dataset, name: str, folder) -> np.ndarray:
    """The order ``name`` of ``dataset``, computed in a scratch folder of its own under ``folder``."""
    scratch = Path(tempfile.mkdtemp(dir=folder))
    return np.load(node_order(dataset, name, Scratch(scratch, 1 << 16)))


def edge_span(dataset, order: np.ndarray) -> float:
    """Mean distance between an edge's endpoints once the nodes are stored in ``order``."""
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    edges = dataset.edge_index()
    return float(np.abs(rank[edges[0]] - rank[edges[1]]).mean())


@pytest.mark.parametrize("name", list(ORDERS))
def test_every_order_is_a_permutation(rmat, name, tmp_path):
    order = order_of(rmat, name, tmp_path)
    assert np.array_equal(np.sort(order), np.arange(rmat.meta.num_nodes))


def test_degree_order_puts_the_most_sampled_nodes_first(rmat, tmp_path):
    degree = np.asarray(rmat.degree)[order_of(rmat, "degree", tmp_path)]
    assert (np.diff(degree) <= 0).all()


def test_degree_classes_keep_the_input_order_inside_each_class(rmat, tmp_path):
    order = order_of(rmat, "dbg", tmp_path)
    classes = np.floor(np.log2(np.asarray(rmat.degree)[order] + 1))
    assert (np.diff(classes) <= 0).all()
    for c in np.unique(classes):
        members = order[classes == c]
        assert (np.diff(members) > 0).all()


def test_breadth_first_places_each_node_after_a_neighbour_or_as_a_new_root(rmat, tmp_path):
    order = order_of(rmat, "bfs", tmp_path)
    degree = np.asarray(rmat.degree, dtype=np.int64)
    placed = np.zeros(len(order), dtype=bool)
    csc, csr = rmat.csc, rmat.csr
    roots = 0
    for v in order:
        neighbours = np.concatenate(
            [csc.indices[csc.indptr[v] : csc.indptr[v + 1]], csr.indices[csr.indptr[v] : csr.indptr[v + 1]]]
        )
        if not placed[neighbours].any():  # a new search: from the highest-degree node left
            assert degree[v] == degree[~placed].max()
            roots += 1
        placed[v] = True
    assert order[0] == np.argmax(degree)
    assert roots < len(order) // 2


@pytest.mark.parametrize("name", ["bfs", "rcm"])
def test_locality_orders_bring_endpoints_closer_than_random_ids(rmat, name, tmp_path):
    identity = np.arange(rmat.meta.num_nodes)
    assert edge_span(rmat, order_of(rmat, name, tmp_path)) < 0.6 * edge_span(rmat, identity)


def test_reverse_cuthill_mckee_recovers_a_shuffled_path(tmp_path):
    n = 200
    ids = np.random.default_rng(0).permutation(n)
    path = write_dataset(tmp_path / "path", ids[:-1], ids[1:], n)
    order = order_of(path, "rcm", tmp_path)
    assert edge_span(path, order) == 1.0  # every edge joins neighbours in the order: bandwidth 1


def test_a_heterogeneous_graph_keeps_each_node_type_in_its_id_range(tmp_path):
    hetero = GraphDataset.open(from_pyg(graph(), tmp_path / "hetero").path)
    offsets = hetero.meta.hetero.node_offsets
    for name in ORDERS:
        order = order_of(hetero, name, tmp_path)
        for lo, hi in zip(offsets[:-1], offsets[1:], strict=True):
            assert sorted(order[lo:hi]) == list(range(lo, hi)), name
