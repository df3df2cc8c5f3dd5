"""RemoteGraphStore: every layout straight from the dataset, PyG's conversions with correct edge
ids, the overlay of user-put edge types, and the errors PyG documents."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import EdgeAttr

from remotegnn.pyg import ReadOnlyStoreError, RemoteGraphStore


@pytest.fixture(params=["local", "remote"])
def store(request, rmat) -> RemoteGraphStore:
    if request.param == "local":
        return RemoteGraphStore.local(rmat.path)
    return RemoteGraphStore.connect(request.getfixturevalue("rmat_server").address)


def test_layouts_are_the_datasets_own(store, rmat):
    n = rmat.meta.num_nodes
    row, col = store[None, "coo"]
    assert torch.equal(torch.stack([row, col]), torch.from_numpy(rmat.edge_index()))
    rowptr, col = store.get_edge_index(edge_type=None, layout="csr")
    assert np.array_equal(rowptr.numpy(), rmat.csr.indptr) and np.array_equal(col.numpy(), rmat.csr.indices)
    row, colptr = store.get_edge_index(None, "csc")
    assert np.array_equal(colptr.numpy(), rmat.csc.indptr) and np.array_equal(row.numpy(), rmat.csc.indices)
    assert row.dtype == colptr.dtype == torch.int64
    [attr] = store.get_all_edge_attrs()
    assert (attr.edge_type, attr.layout.value, attr.is_sorted, attr.size) == (None, "coo", False, (n, n))


def test_pyg_conversions_report_original_edge_ids(store, rmat):
    """csc() converts the COO, whose positions are edge ids, so its permutation maps CSC positions
    to edge ids: every (source, target, edge id) triple is a real edge."""
    row, colptr, perm = store.csc()
    targets = torch.repeat_interleave(torch.arange(len(colptr) - 1), colptr.diff())
    edge_index = torch.from_numpy(rmat.edge_index())
    assert torch.equal(edge_index[0, perm], row) and torch.equal(edge_index[1, perm], targets)
    assert torch.equal(colptr, torch.from_numpy(np.array(rmat.csc.indptr)))


def test_unknown_edge_types_raise_key_error_naming_them(store):
    with pytest.raises(KeyError, match=r"edge type \('a', 'to', 'b'\) in layout coo.*None \(coo\)"):
        store[("a", "to", "b"), "coo"]
    with pytest.raises(KeyError, match="no dataset backs edge type 'x'"):
        store.sample("x", np.array([0]), [2], False, (0,))


def test_sampling_checks_seeds_where_the_data_lives(store, rmat):
    sub = store.sample(None, np.array([1, 2]), [3, 2], False, (0, 0, 0))
    assert sub.n_id[:2].tolist() == [1, 2] and sub.num_sampled_nodes[0] == 2
    with pytest.raises(IndexError, match=f"seed nodes: index {rmat.meta.num_nodes}"):
        store.sample(None, np.array([rmat.meta.num_nodes]), [3], False, (0,))
    with pytest.raises(ValueError, match="fanout"):
        store.sample(None, np.array([1]), [0], False, (0,))


def test_a_connected_store_is_read_only(rmat_server):
    store = RemoteGraphStore.connect(rmat_server.address)
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        store[("a", "to", "b"), "coo"] = (torch.tensor([0]), torch.tensor([1]))
    with pytest.raises(ValueError, match="read-only"):
        del store[None, "coo"]


def test_local_overlay_holds_other_edge_types_but_not_the_datasets(small, authors):
    store = RemoteGraphStore.local(
        {("paper", "cites", "paper"): small.path, ("author", "knows", "author"): authors.path}
    )
    writes = ("author", "writes", "paper")
    edges = (torch.tensor([0, 1, 5]), torch.tensor([2, 2, 13]))
    assert store.put_edge_index(edges, edge_type=writes, layout="coo", size=(6, 14))
    assert all(torch.equal(a, b) for a, b in zip(store[writes, "coo"], edges))
    assert [(a.edge_type, a.size) for a in store.get_all_edge_attrs()] == [
        (("paper", "cites", "paper"), (14, 14)),
        (("author", "knows", "author"), (6, 6)),
        (writes, (6, 14)),
    ]
    row_dict, _, _ = store.coo()  # PyG's heterogeneous conversion over all three
    assert sorted(row_dict, key=str) == sorted(
        [("paper", "cites", "paper"), ("author", "knows", "author"), writes], key=str
    )
    with pytest.raises(ReadOnlyStoreError, match="structure of a read-only dataset"):
        store[("paper", "cites", "paper"), "coo"] = edges
    with pytest.raises(ReadOnlyStoreError, match="structure of a read-only dataset"):
        store.remove_edge_index(EdgeAttr(("author", "knows", "author"), "coo"))
    assert store.remove_edge_index(edge_type=writes, layout="coo") is True
    assert store.remove_edge_index(edge_type=writes, layout="coo") is False
    with pytest.raises(KeyError):
        store[writes, "coo"]
