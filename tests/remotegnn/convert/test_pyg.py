"""PyG Data -> dataset -> PyG Data is exact: tensors, dtypes, edge order, self loops, duplicates."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from foundation.errors import UsageError
from remotegnn.convert import ConvertWarning
from remotegnn.convert.pyg import from_pyg, load_pyg, save_pyg, to_pyg
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset

KEYS = ("x", "edge_index", "y", "train_mask", "val_mask", "test_mask")


def graph(num_nodes: int = 60, num_edges: int = 400, seed: int = 0, **extra) -> Data:
    """A random graph that has self loops and duplicate edges in it, with labels and masks."""
    g = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, num_nodes, (2, num_edges), generator=g)
    edge_index[:, 10] = edge_index[:, 3]  # a duplicate
    edge_index[1, 20] = edge_index[0, 20]  # a self loop
    split = torch.rand(num_nodes, generator=g)
    return Data(
        x=torch.randn(num_nodes, 12, generator=g),
        edge_index=edge_index,
        y=torch.randint(0, 5, (num_nodes,), generator=g),
        train_mask=split < 0.6,
        val_mask=(split >= 0.6) & (split < 0.8),
        test_mask=split >= 0.8,
        **extra,
    )


def assert_same(a: Data, b: Data, keys=KEYS) -> None:
    for key in keys:
        assert a[key].dtype == b[key].dtype, key
        assert torch.equal(a[key], b[key]), key


def test_round_trip_is_exact(tmp_path):
    data = graph()
    result = from_pyg(data, tmp_path / "ds")
    assert result.edges.self_loops_dropped == result.edges.duplicates_dropped == 0
    assert result.meta.num_edges == 400 and not result.meta.undirected and result.warnings == []
    back = to_pyg(tmp_path / "ds")
    assert set(back.keys()) == set(KEYS)
    assert_same(data, back)


def test_round_trip_through_a_pt_file(tmp_path):
    data = graph(seed=1)
    src = tmp_path / "g.pt"
    torch.save(data.to_dict(), src)
    from_pyg(load_pyg(src), tmp_path / "ds")
    exported = save_pyg(tmp_path / "ds", tmp_path / "back.pt")
    assert exported.num_edges == 400 and exported.keys == sorted(KEYS)
    assert_same(data, Data.from_dict(torch.load(tmp_path / "back.pt", weights_only=True)))
    with pytest.raises(UsageError, match="already exists"):
        save_pyg(tmp_path / "ds", tmp_path / "back.pt")


def test_float16_features_by_option_and_by_source(tmp_path):
    data = graph(seed=2)
    from_pyg(data, tmp_path / "half", dtype="float16")
    back = to_pyg(tmp_path / "half")
    assert back.x.dtype == torch.float16 and torch.equal(back.x, data.x.half())
    assert_same(data, back, keys=KEYS[1:])

    data.x = data.x.half()
    assert GraphDataset.open(from_pyg(data, tmp_path / "src16").path).meta.feature_dtype == "float16"
    assert_same(data, to_pyg(tmp_path / "src16"))


def test_unlabelled_graph_without_masks_round_trips_without_them(tmp_path):
    data = Data(x=torch.rand(5, 3), edge_index=torch.tensor([[0, 1, 1, 4], [1, 0, 1, 2]]))
    from_pyg(data, tmp_path / "ds")
    back = to_pyg(tmp_path / "ds")
    assert set(back.keys()) == {"x", "edge_index"}
    assert_same(data, back, keys=("x", "edge_index"))


def test_index_splits_multi_split_masks_and_column_labels(tmp_path):
    data = graph(seed=3)
    masks = torch.stack([data.train_mask, ~data.train_mask], dim=1)  # [N, 2], PyG's multi-split layout
    data.train_mask = masks
    data.test_idx = torch.tensor([5, 1, 5])
    del data.test_mask
    data.y = data.y[:, None]
    with pytest.warns(ConvertWarning, match=r"y \[N, 1\]"):
        result = from_pyg(data, tmp_path / "ds", split_index=1)
    ds = GraphDataset.open(result.path)
    assert np.array_equal(ds.split("train"), np.flatnonzero(~masks[:, 0].numpy()))
    assert ds.split("test").tolist() == [1, 5]
    assert np.array_equal(ds.labels, data.y[:, 0].numpy())
    with pytest.raises(UsageError, match="--split-index 2 is out of range"):
        from_pyg(data, tmp_path / "bad", split_index=2)


def test_attributes_the_format_cannot_hold_are_named(tmp_path):
    data = graph(edge_attr=torch.rand(400, 2), pos=torch.rand(60, 3))
    with pytest.warns(ConvertWarning, match="not carried over.*edge_attr, pos"):
        result = from_pyg(data, tmp_path / "ds")
    assert "edge_attr, pos" in result.warnings[0]


def test_edge_weights_are_kept_for_weighted_sampling_and_round_trip(tmp_path):
    weights = torch.rand(400)
    result = from_pyg(graph(edge_weight=weights), tmp_path / "ds", weight_attr="edge_weight")
    assert result.meta.edge_weight == "edge_weight" and result.warnings == []
    dataset = GraphDataset.open(tmp_path / "ds", verify=True)
    np.testing.assert_array_equal(dataset.edge_weights, weights.numpy()[np.asarray(dataset.csc.eid)])  # CSC order
    back = to_pyg(dataset)
    assert torch.equal(back.edge_weight, weights)
    assert GraphDataset.open(from_pyg(graph(), tmp_path / "plain").path).edge_weights is None


@pytest.mark.parametrize(
    "extra, options, message",
    [
        ({}, {"weight_attr": "edge_weight"}, "weight_attr='edge_weight' must name a 1-D tensor"),
        ({"edge_weight": torch.rand(399)}, {"weight_attr": "edge_weight"}, "one weight per edge"),
        ({"w": -torch.rand(400)}, {"weight_attr": "w"}, "finite numbers >= 0"),
        ({"w": torch.rand(400)}, {"weight_attr": "w", "policy": "drop"}, "kept as given"),
    ],
)
def test_bad_edge_weights_are_refused_and_nothing_is_written(tmp_path, extra, options, message):
    from remotegnn.convert import PolicyOverrides

    if options.pop("policy", None):
        options["policy"] = PolicyOverrides(duplicates="drop")
    with pytest.raises((ConvertError, UsageError), match=message):
        from_pyg(graph(**extra), tmp_path / "ds", **options)
    assert list(tmp_path.iterdir()) == []


def test_a_policy_can_still_clean_pyg_edges(tmp_path):
    from remotegnn.convert import PolicyOverrides

    result = from_pyg(graph(), tmp_path / "ds", policy=PolicyOverrides(self_loops="drop", duplicates="drop"))
    assert result.edges.self_loops_dropped >= 1 and result.edges.duplicates_dropped >= 1


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: setattr(d, "y", torch.zeros(59, dtype=torch.long)), "y has 59 rows but the graph has 60 nodes"),
        (lambda d: setattr(d, "y", torch.rand(60)), "labels must be integer class ids"),
        (lambda d: setattr(d, "train_mask", torch.ones(59, dtype=torch.bool)), "train_mask has shape"),
        (lambda d: (delattr(d, "val_mask"), setattr(d, "val_idx", torch.tensor([3, 60]))), "val_idx holds node id 60"),
        (lambda d: setattr(d, "edge_index", torch.tensor([[0, 60], [1, 2]])), "node id 60 is outside"),
        (lambda d: setattr(d, "edge_index", torch.zeros(3, 4, dtype=torch.long)), r"expected integer \[2, E\]"),
    ],
)
def test_bad_data_is_refused_and_nothing_is_written(tmp_path, change, message):
    data = graph()
    change(data)
    with pytest.raises(ConvertError, match=message):
        from_pyg(data, tmp_path / "ds")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_pt_files_must_hold_a_dict_of_tensors(tmp_path):
    marker = tmp_path / "ran"
    torch.save(graph(), tmp_path / "object.pt")
    torch.save([torch.zeros(1)], tmp_path / "list.pt")
    (tmp_path / "evil.pt").write_bytes(pickle.dumps(_Evil(marker)))
    (tmp_path / "junk.pt").write_bytes(b"not a torch file")
    with pytest.raises(ConvertError, match=r"holds torch_geometric\..*torch.save\(data.to_dict\(\), path\)"):
        load_pyg(tmp_path / "object.pt")
    with pytest.raises(ConvertError, match="holds a list; expected a dict of tensors"):
        load_pyg(tmp_path / "list.pt")
    with pytest.raises(ConvertError):
        load_pyg(tmp_path / "evil.pt")
    assert not marker.exists()
    with pytest.raises(ConvertError, match="not a readable torch file|holds"):
        load_pyg(tmp_path / "junk.pt")
    with pytest.raises(ConvertError, match="does not exist"):
        load_pyg(tmp_path / "missing.pt")


class _Evil:
    """Unpickling this would create a file: the loader must never run it."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))
