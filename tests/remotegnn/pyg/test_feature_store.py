"""RemoteFeatureStore honours PyG's FeatureStore contract, read locally and through a real server."""

from __future__ import annotations

import socket

import numpy as np
import pytest
import torch
from torch_geometric.data import TensorAttr

from remotegnn.pyg import ReadOnlyStoreError, RemoteFeatureStore, StoreConnectionError
from remotegnn.pyg.client import Connection


@pytest.fixture(params=["local", "local-auto", "remote"])
def store(request, small) -> RemoteFeatureStore:
    if request.param.startswith("local"):
        policy = "auto" if request.param == "local-auto" else "degree"
        return RemoteFeatureStore.local(small.path, cache_bytes=4 * 16, policy=policy)  # 4 rows cached
    return RemoteFeatureStore.connect(request.getfixturevalue("small_server").address)


def features(dataset) -> torch.Tensor:
    return torch.from_numpy(np.array(dataset.features))


def test_reads_follow_every_index_form(store, small):
    x, y = features(small), torch.arange(14) % 3
    assert torch.equal(store[None, "x", None], x)
    assert torch.equal(store[None, "x"](), x)  # a view, called: the whole tensor
    assert torch.equal(store[None, "y", torch.tensor([13, 0, 5])], y[[13, 0, 5]])
    assert torch.equal(store[None, "x", torch.tensor([2, 2, 7], dtype=torch.int32)], x[[2, 2, 7]])
    assert torch.equal(store[None, "x", [4, 1]], x[[4, 1]])
    assert torch.equal(store[None, "x", 1:12:3], x[1:12:3])
    assert torch.equal(store[None, "x", -1], x[-1])  # one row: the first dimension goes
    assert torch.equal(store[None, "y", torch.tensor([-2, 3])], y[[-2, 3]])
    mask = torch.arange(14) % 4 == 0
    assert torch.equal(store[None, "x", mask], x[mask])
    assert store[None, "x", torch.tensor([], dtype=torch.long)].shape == (0, 4)
    assert store[None, "x", None].dtype == torch.float32 and store[None, "y", None].dtype == torch.int64


def test_sizes_and_attribute_listing(store):
    assert store.get_tensor_size(None, "x") == (14, 4)
    assert store.get_tensor_size(None, "x", torch.tensor([1, 2, 3])) == (3, 4)
    assert store.get_tensor_size(None, "y", 5) == ()
    assert store.get_tensor_size(None, "z") is None  # PyG: None for a tensor that does not exist
    assert [(a.group_name, a.attr_name) for a in store.get_all_tensor_attrs()] == [(None, "x"), (None, "y")]


def test_multi_get_is_one_round_trip_per_batch(small, small_server, monkeypatch):
    calls = []
    real_call = Connection.call
    monkeypatch.setattr(
        Connection,
        "call",
        lambda self, request, tensors=None: (
            calls.append((request.op, sorted(tensors or {}))),
            real_call(self, request, tensors),
        )[1],
    )
    store = RemoteFeatureStore.connect(small_server.address)
    calls.clear()
    nodes = torch.tensor([3, 9, 3])
    x, y = store.multi_get_tensor([TensorAttr(None, "x", nodes), TensorAttr(None, "y", nodes)])
    assert calls == [("read", ["i0"])]  # both attributes, and the shared index sent once
    assert torch.equal(x, features(small)[nodes]) and torch.equal(y, nodes % 3)


@pytest.mark.parametrize(
    "key, error, words",
    [
        (("paper", "x", 0), KeyError, ["'x'", "'paper'"]),  # unknown group
        ((None, "feat", 0), KeyError, ["'feat'", "holds: x, y"]),  # unknown attribute
        ((None, "x", 14), IndexError, ["'x'", "14", "14 rows"]),  # past the end
        ((None, "y", torch.tensor([0, -15])), IndexError, ["'y'", "-15"]),
        ((None, "x", torch.ones(2, 2, dtype=torch.long)), IndexError, ["'x'", "1-D"]),
        ((None, "x", torch.tensor([0.5])), IndexError, ["'x'", "float"]),
        ((None, "x", torch.ones(3, dtype=torch.bool)), IndexError, ["'x'", "mask", "14"]),
    ],
)
def test_bad_reads_raise_pyg_error_types_naming_the_attribute(store, key, error, words):
    with pytest.raises(error) as caught:
        store[key]
    assert all(word in str(caught.value) for word in words), str(caught.value)


def test_a_connected_store_is_read_only(small_server):
    store = RemoteFeatureStore.connect(small_server.address)
    with pytest.raises(ReadOnlyStoreError, match="cannot put attribute 'x'.*read-only"):
        store[None, "x", None] = torch.zeros(14, 4)
    with pytest.raises(ValueError, match="cannot remove attribute 'y'"):
        del store[None, "y"]
    assert store.get_tensor_size(None, "x") == (14, 4)  # nothing changed


def test_local_puts_and_removes_are_an_overlay_over_the_dataset(small):
    store = RemoteFeatureStore.local(small.path)
    x = features(small)
    # a new attribute of the dataset's group, then row updates to it (PyG Data's rule)
    assert store.put_tensor(torch.zeros(14, 2), group_name=None, attr_name="h", index=None)
    store[None, "h", torch.tensor([1, 3])] = torch.ones(2, 2)
    assert store[None, "h", None].sum() == 4 and store[None, "h", 3].tolist() == [1.0, 1.0]
    # shadowing a dataset attribute in RAM; rows of a dataset attribute cannot be written
    with pytest.raises(ValueError, match="cannot write rows of attribute 'x'.*read-only dataset"):
        store[None, "x", torch.tensor([0])] = torch.zeros(1, 4)
    store.update_tensor(2 * x, group_name=None, attr_name="x", index=None)
    assert torch.equal(store[None, "x", torch.tensor([5])], 2 * x[[5]])
    # removing hides the dataset attribute too; removing twice reports nothing removed
    assert store.remove_tensor(group_name=None, attr_name="x", index=None) is True
    assert store.remove_tensor(group_name=None, attr_name="x", index=None) is False
    with pytest.raises(KeyError, match="'x'"):
        store[None, "x", 0]
    assert store.get_tensor_size(None, "x") is None
    assert [a.attr_name for a in store.get_all_tensor_attrs()] == ["y", "h"]
    with pytest.raises(ValueError, match="whole tensor"):
        store.remove_tensor(group_name=None, attr_name="h", index=torch.tensor([1]))
    with pytest.raises(KeyError, match="'z'"):
        store[None, "z", torch.tensor([0])] = torch.zeros(1, 4)  # rows of nothing
    store[None, "x", None] = x  # back again, from RAM
    assert torch.equal(store[None, "x", None], x)
    assert RemoteFeatureStore.local(small.path)[None, "x", None].equal(x)  # the files never changed


def test_heterogeneous_groups_from_datasets_and_puts(small, authors):
    store = RemoteFeatureStore.local({"paper": small.path, "author": authors.path})
    store["venue", "x", None] = torch.arange(6.0).view(3, 2)  # a group only in RAM
    keys = [(a.group_name, a.attr_name) for a in store.get_all_tensor_attrs()]
    assert keys == [("paper", "x"), ("paper", "y"), ("author", "x"), ("author", "y"), ("venue", "x")]
    idx = torch.tensor([5, 0])
    assert torch.equal(store["paper"].x[idx], features(small)[idx])  # PyG's attribute-style access
    assert torch.equal(store["author", "x"][idx], features(authors)[idx])
    assert torch.equal(store["author"].y(), torch.arange(6) % 2)
    assert torch.equal(store["venue", "x", 2], torch.tensor([4.0, 5.0]))
    assert store.get_tensor_size("author", "x") == (6, 3)
    with pytest.raises(IndexError, match="attribute 'x' of group 'author'.*6 rows"):
        store["author", "x", torch.tensor([6])]
    tensors = store.multi_get_tensor(
        [TensorAttr("paper", "y", idx), TensorAttr("venue", "x", torch.tensor([1])), TensorAttr("author", "x", idx)]
    )
    assert [t.shape for t in tensors] == [(2,), (1, 2), (2, 3)]


def test_connecting_to_nothing_names_the_address():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    with pytest.raises(StoreConnectionError, match=f"127.0.0.1:{port}"):
        RemoteFeatureStore.connect(f"127.0.0.1:{port}", timeout_s=5)
    with pytest.raises(ValueError, match="HOST:PORT"):
        RemoteFeatureStore.connect("localhost")
