"""tolokers.npz converts like PyG's HeterophilousGraphDataset; the generic npz keys and their errors."""

from __future__ import annotations

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.convert import ConvertWarning, from_npz
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset


def test_tolokers(shared_datasets, tmp_path):
    src = shared_datasets / "tolokers" / "tolokers.npz"
    raw = np.load(src)
    result = from_npz(src, tmp_path / "t")
    ds = GraphDataset.open(result.path, verify=True)
    meta = ds.meta
    # PyG: 11,758 nodes, 1,038,000 edges (519,000 pairs symmetrised), 10 features, 2 classes.
    assert (meta.num_nodes, meta.num_edges, meta.feature_dim, meta.num_classes) == (11758, 1038000, 10, 2)
    assert meta.undirected and meta.name == "tolokers" and result.warnings == []
    assert np.array_equal(ds.features, raw["node_features"]) and np.array_equal(ds.labels, raw["node_labels"])
    for split in ("train", "val", "test"):
        assert np.array_equal(ds.split(split), np.flatnonzero(raw[f"{split}_masks"][0]))
    assert [len(ds.split(s)) for s in ("train", "val", "test")] == [5879, 2939, 2940]
    other = GraphDataset.open(from_npz(src, tmp_path / "t9", split_index=9).path)
    assert np.array_equal(other.split("val"), np.flatnonzero(raw["val_masks"][9]))
    with pytest.raises(UsageError, match=r"--split-index 10 is out of range.*10 splits"):
        from_npz(src, tmp_path / "t10", split_index=10)


def test_generic_keys(tmp_path):
    edge_index = np.array([[0, 1, 2, 2, 3], [1, 0, 3, 3, 3]])
    np.savez(
        tmp_path / "g.npz",
        edge_index=edge_index,
        x=np.arange(8, dtype=np.float64).reshape(4, 2),
        y=np.array([1, 0, -1, 1]),
        train_idx=np.array([3, 0]),
        comment=np.array([1]),
    )
    with pytest.warns(ConvertWarning):
        result = from_npz(tmp_path / "g.npz", tmp_path / "ds")
    ds = GraphDataset.open(result.path)
    assert not ds.meta.undirected and result.edges.self_loops_dropped == 1 and result.edges.duplicates_dropped == 1
    assert ds.edge_index().tolist() == [[0, 1, 2], [1, 0, 3]]
    assert ds.meta.feature_dtype == "float32" and np.array_equal(ds.features, np.arange(8).reshape(4, 2))
    assert ds.labels.tolist() == [1, 0, -1, 1] and ds.meta.num_classes == 2
    assert ds.meta.splits == ["train"] and ds.split("train").tolist() == [0, 3]
    assert any("float64; stored as float32" in w for w in result.warnings)
    assert any("not carried over: comment" in w for w in result.warnings)


def test_random_split_of_labelled_nodes_and_constant_features(tmp_path):
    np.savez(tmp_path / "g.npz", edges=np.array([[0, 1], [1, 2]]), y=np.array([0, 1, -1, 1, 0]), num_nodes=np.array(5))
    with pytest.warns(ConvertWarning, match="no node features"):
        result = from_npz(tmp_path / "g.npz", tmp_path / "ds", split_ratios=(0.5, 0.25, 0.25), seed=1)
    ds = GraphDataset.open(result.path)
    assert ds.meta.undirected and ds.meta.num_edges == 4 and ds.meta.feature_dim == 1
    splits = np.concatenate([ds.split(s) for s in ("train", "val", "test")])
    assert sorted(splits.tolist()) == [0, 1, 3, 4]  # node 2 is unlabelled


@pytest.mark.parametrize(
    "arrays, message",
    [
        (dict(x=np.zeros((3, 2))), "has no edge_index"),
        (dict(edge_index=np.zeros((3, 2), dtype=int)), r"\[edge_index\] has shape \[3, 2\]; expected \[2, E\]"),
        (dict(edges=np.zeros((2, 3), dtype=int)), r"\[edges\] has shape \[2, 3\]; expected \[E, 2\]"),
        (dict(edges=np.zeros((2, 2))), r"\[edges\] has dtype float64; node ids must be integers"),
        (dict(edges=np.array([[0, 5]]), x=np.zeros((4, 2))), r"target node id 5 is outside \[0, 4\)"),
        (
            dict(edges=np.array([[0, 1]]), x=np.zeros((4, 2)), y=np.zeros(3, dtype=int)),
            r"\[y\] has 3 rows but the graph has 4",
        ),
        (
            dict(edges=np.array([[0, 1]]), x=np.zeros((4, 2)), train_mask=np.ones(5, bool)),
            r"\[train_mask\] has shape \[5\]",
        ),
        (dict(edges=np.array([[0, 1]]), x=np.zeros(4)), r"\[x\] has shape \[4\]; features must be a 2-D"),
        (dict(edges=np.array([[0, 1]]), x=np.zeros((4, 2)), y=np.array([0.5, 1, 1, 1])), "regression targets"),
        (dict(edges=np.array([[0, 1]]), x=np.array([None] * 4)), "cannot be read without unpickling"),
    ],
)
def test_bad_archives(tmp_path, arrays, message):
    np.savez(tmp_path / "g.npz", **arrays)
    with pytest.raises(ConvertError, match=message):
        from_npz(tmp_path / "g.npz", tmp_path / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.npz"]


def test_files_that_are_not_archives(tmp_path):
    np.save(tmp_path / "one.npy", np.zeros(3))
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ConvertError, match="holds a single array"):
        from_npz(tmp_path / "one.npy", tmp_path / "ds")
    with pytest.raises(ConvertError, match="not a readable .npz archive"):
        from_npz(tmp_path / "junk.npz", tmp_path / "ds")
    with pytest.raises(ConvertError, match="does not exist"):
        from_npz(tmp_path / "missing.npz", tmp_path / "ds")
