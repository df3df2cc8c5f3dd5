"""A reordered dataset is the same graph in the user's ids, and samples the same batches for the
same draws; bad requests are refused before anything is written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.errors import DatasetError
from remotegnn.sampling import NeighborSampler
from remotegnn.store import DatasetWriter, GraphDataset
from remotegnn.store.meta import ORDER_FILE
from remotegnn.store.orders import ORDERS
from remotegnn.store.reorder import reorder


def user_edges(dataset: GraphDataset) -> np.ndarray:
    edges = dataset.edge_index()
    return dataset.to_user(edges.ravel()).reshape(edges.shape)


@pytest.fixture(scope="module")
def reordered(rmat, tmp_path_factory) -> dict[str, GraphDataset]:
    root = tmp_path_factory.mktemp("reordered")
    return {name: GraphDataset.open(reorder(rmat, root / name, name, progress=False).path) for name in ORDERS}


@pytest.mark.parametrize("name", list(ORDERS))
def test_the_same_graph_in_the_users_ids(rmat, reordered, name):
    moved = reordered[name]
    moved.verify()
    assert moved.meta.node_order == name
    assert not np.array_equal(moved.user_ids, np.arange(rmat.meta.num_nodes))  # the rows did move
    assert np.array_equal(user_edges(moved), rmat.edge_index())  # edge ids kept, endpoints in user ids
    users = np.asarray(moved.user_ids)
    assert np.array_equal(moved.features, np.asarray(rmat.features)[users])
    assert np.array_equal(moved.labels, np.asarray(rmat.labels)[users])
    assert np.array_equal(moved.degree, np.asarray(rmat.degree)[users])
    assert np.array_equal(moved.user_split("train"), rmat.split("train"))  # in the order it was given


@pytest.mark.parametrize("name", list(ORDERS))
@pytest.mark.parametrize(
    "options",
    [{}, {"replace": True}, {"disjoint": True}, {"weighted": True}],
    ids=["uniform", "replace", "disjoint", "weighted"],
)
def test_same_draws_give_the_same_batches(rmat, reordered, tmp_path, name, options):
    original, moved = rmat, reordered[name]
    if options.pop("weighted", False):
        weights = np.random.default_rng(0).random(rmat.meta.num_edges).astype(np.float32)
        original = with_weights(rmat, weights, tmp_path / "weighted")
        moved = GraphDataset.open(reorder(original, tmp_path / "moved", name, progress=False).path)
        options = {"weights": original.edge_weights}
        moved_options = {"weights": moved.edge_weights}
    else:
        moved_options = options
    seeds = np.asarray(rmat.split("train"))[:128]
    mine = NeighborSampler(original.csc, [6, 4], **options).sample(seeds, 1, 2, 3)
    theirs = NeighborSampler(moved.csc, [6, 4], **moved_options).sample(moved.to_positions(seeds), 1, 2, 3)
    assert np.array_equal(moved.to_user(theirs.n_id), mine.n_id)
    assert np.array_equal(theirs.edge_index, mine.edge_index)
    assert np.array_equal(theirs.e_id, mine.e_id)
    assert theirs.num_sampled_nodes == mine.num_sampled_nodes
    assert (theirs.batch is None) == (mine.batch is None)


def with_weights(dataset: GraphDataset, weights: np.ndarray, path) -> GraphDataset:
    """``dataset`` again with edge weights (in edge-id order)."""
    edges = dataset.edge_index()
    with DatasetWriter(path, name="weighted") as writer:
        writer.write_graph(edges[0], edges[1], dataset.meta.num_nodes)
        writer.write_edge_weights("w", weights)
        features = writer.features(dataset.meta.feature_dim)
        features[:] = dataset.features
        del features
        writer.commit()
    return GraphDataset.open(path)


def test_reordering_again_keeps_the_users_ids(rmat, reordered, tmp_path):
    twice = GraphDataset.open(reorder(reordered["degree"], tmp_path / "twice", "bfs", progress=False).path)
    assert twice.meta.node_order == "bfs"
    assert np.array_equal(user_edges(twice), rmat.edge_index())
    assert np.array_equal(twice.features, np.asarray(rmat.features)[np.asarray(twice.user_ids)])


def test_an_unknown_order_is_refused_and_nothing_written(rmat, tmp_path):
    with pytest.raises(UsageError, match="--order 'hilbert': choose one of degree, dbg, bfs, rcm"):
        reorder(rmat, tmp_path / "out", "hilbert")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_destination_is_kept_without_overwrite(rmat, reordered, tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="already exists; pass --overwrite"):
        reorder(rmat, taken, "degree")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and (taken / "keep.txt").read_text() == "mine"


def test_an_order_file_that_repeats_a_node_is_reported(reordered, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(reordered["degree"].path, copy)
    ids = np.load(copy / f"{ORDER_FILE}.npy")
    ids[1] = ids[0]
    np.save(copy / f"{ORDER_FILE}.npy", ids)  # same size: only the content is wrong
    with pytest.raises(DatasetError, match="repeats node ids"):
        GraphDataset.open(copy).to_positions(np.arange(5))


def test_meta_naming_an_order_without_its_file_is_refused(reordered, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(reordered["degree"].path, copy)
    meta = json.loads((copy / "meta.json").read_text())
    del meta["files"][ORDER_FILE]
    (copy / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetError, match="node_order: named without an order/ids file"):
        GraphDataset.open(copy)
