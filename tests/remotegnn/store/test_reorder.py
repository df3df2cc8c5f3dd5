"""A reordered dataset is the same graph in the user's ids, and samples the same batches for the
same draws; bad requests are refused before anything is written.

The rewrite runs in bounded memory; ``reorder_in_ram`` below is the rewrite as it was done in RAM
(every array whole, numpy alone), kept as the reference its files must equal byte for byte."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import numpy as np
import pytest

from contracts.dataset import ORDER_FILE, WEIGHT_FILE
from foundation.errors import UsageError
from remotegnn.errors import DatasetError
from remotegnn.sampling import NeighborSampler
from remotegnn.store import DatasetWriter, GraphDataset
from remotegnn.store.orders import ORDERS
from remotegnn.store.reorder import reorder

TINY_MEMORY = 4096  # blocks of a few dozen nodes: every pass runs many blocks, sorts many groups


# -- the reference: the rewrite in RAM ----------------------------------------------------------
def in_ram_order(dataset: GraphDataset, name: str) -> np.ndarray:
    """``order[new] = old``, every array whole: the orders as documented in remotegnn.store.orders."""
    csc, csr = dataset.csc, dataset.csr
    degree = np.asarray(dataset.degree, dtype=np.int64)
    if name == "degree":
        order = np.argsort(-degree, kind="stable")
    elif name == "dbg":
        order = np.argsort(-np.floor(np.log2(degree + 1)).astype(np.int64), kind="stable")
    elif name == "bfs":
        order = searched([csc, csr], np.argsort(-degree, kind="stable"), None)
    else:  # rcm: from the lowest (in + out) degree, each node's new neighbours by ascending degree
        both = np.diff(csc.indptr) + np.diff(csr.indptr)
        order = searched([csr, csc], np.argsort(both, kind="stable"), both)[::-1]
    hetero = dataset.meta.hetero
    if hetero is not None:  # each node type keeps its id range
        order = order[np.argsort(np.searchsorted(hetero.node_offsets[1:], order, side="right"), kind="stable")]
    return order


def searched(adjacency, roots: np.ndarray, degree: np.ndarray | None) -> np.ndarray:
    """Breadth-first, level by level, from each root not reached yet: a level is the first
    occurrences of unseen nodes in its nodes' lists (each node's lists in ``adjacency`` order);
    with ``degree``, each node's finds are put in ascending degree, ties kept in finding order."""
    seen = np.zeros(len(roots), dtype=bool)
    alone = sum(np.diff(ptr) for ptr, _, _ in adjacency) == 0
    levels = []
    for root in roots:
        if seen[root]:
            continue
        seen[root] = True
        level = np.array([root])
        if alone[root]:  # no neighbours: a level of its own, quickly (R-MAT has many such nodes)
            levels.append(level)
            continue
        while len(level):
            levels.append(level)
            owners, found = neighbour_lists(adjacency, level)
            fresh = ~seen[found]
            owners, found = owners[fresh], found[fresh]
            first = np.sort(np.unique(found, return_index=True)[1])
            owners, found = owners[first], found[first]
            if degree is not None:
                found = found[np.lexsort((np.arange(len(found)), degree[found], owners))]
            seen[found] = True
            level = found
    return np.concatenate(levels)


def neighbour_lists(adjacency, level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every list of every node of ``level``, laid end to end in queue order, and whose each is."""
    owners, found = [], []
    for ptr, idx, _ in adjacency:
        lengths = ptr[level + 1] - ptr[level]
        ends = np.cumsum(lengths)
        found.append(np.asarray(idx)[np.repeat(ptr[level] - ends + lengths, lengths) + np.arange(ends[-1])])
        owners.append(np.repeat(np.arange(len(level)), lengths))
    by_owner = np.argsort(np.concatenate(owners), kind="stable")  # a node's first lists before its second
    return np.concatenate(owners)[by_owner], np.concatenate(found)[by_owner]


def reorder_in_ram(dataset: GraphDataset, dst: Path, name: str) -> None:
    meta = dataset.meta
    order = in_ram_order(dataset, name)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    with DatasetWriter(dst, name=meta.name) as writer:
        writer.write_like(meta)
        writer.node_order = name
        for layout in ("csc", "csr"):
            indptr, indices, eid = getattr(dataset, layout)
            lengths = np.diff(indptr)[order]
            new_indptr = writer.array(f"{layout}/indptr", indptr.shape, np.int64)
            new_indptr[0] = 0
            np.cumsum(lengths, out=new_indptr[1:])
            moved = np.repeat(indptr[:-1][order] - new_indptr[:-1], lengths) + np.arange(meta.num_edges)
            moves = [(f"{layout}/indices", indices), (f"{layout}/eid", eid)]
            if layout == "csc" and dataset.edge_weights is not None:
                moves.append((WEIGHT_FILE, dataset.edge_weights))
            for role, values in moves:
                out = writer.array(role, values.shape, values.dtype)
                out[:] = rank[values[moved]] if role.endswith("indices") else values[moved]
                out.flush()
        writer.put("degree", np.asarray(dataset.degree)[order])
        writer.put("labels", np.asarray(dataset.labels)[order])
        for split in meta.splits:
            writer.put(f"splits/{split}", rank[np.asarray(dataset.split(split))].astype(meta.index_dtype))
        user_ids = order if dataset.user_ids is None else np.asarray(dataset.user_ids)[order]
        writer.put(ORDER_FILE, user_ids.astype(meta.index_dtype))
        features = writer.array("features", (meta.num_nodes, meta.feature_dim), meta.feature_dtype)
        features[:] = dataset.features[order]
        features.flush()
        del features
        writer.commit(source=meta.source)


def assert_same_files(expected: Path, actual: Path) -> None:
    """Every file of both directories, meta.json (names, shapes, checksums) included, byte for byte."""
    names = sorted(str(p.relative_to(expected)) for p in expected.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(actual)) for p in actual.rglob("*") if p.is_file())
    assert [n for n in names if not filecmp.cmp(expected / n, actual / n, shallow=False)] == []


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


@pytest.mark.parametrize("memory", [None, TINY_MEMORY], ids=["default-memory", "tiny-memory"])
@pytest.mark.parametrize("name", list(ORDERS))
def test_the_files_are_the_in_ram_rewrites(rmat, tmp_path, name, memory):
    reorder_in_ram(rmat, tmp_path / "expected", name)
    options = {} if memory is None else {"memory": memory}
    reorder(rmat, tmp_path / "actual", name, progress=False, **options)
    assert_same_files(tmp_path / "expected", tmp_path / "actual")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["actual", "expected"]  # no scratch left beside them


@pytest.fixture(scope="module")
def variants(rmat, reordered, tmp_path_factory) -> dict[str, GraphDataset]:
    """Datasets that take the rewrite's other paths: directed with edge weights, already
    reordered (user ids to carry), heterogeneous (an order per node type)."""
    from remotegnn.convert.pyg import from_pyg
    from tests.remotegnn.test_hetero import graph

    root = tmp_path_factory.mktemp("variants")
    weights = np.random.default_rng(0).random(rmat.meta.num_edges).astype(np.float32)
    return {
        "weighted": with_weights(rmat, weights, root / "weighted"),
        "reordered": reordered["bfs"],
        "hetero": GraphDataset.open(from_pyg(graph(), root / "hetero").path),
    }


@pytest.mark.parametrize("name", list(ORDERS))
@pytest.mark.parametrize("variant", ["weighted", "reordered", "hetero"])
def test_the_files_are_the_in_ram_rewrites_of_every_kind_of_dataset(variants, tmp_path, variant, name):
    dataset = variants[variant]
    reorder_in_ram(dataset, tmp_path / "expected", name)
    reorder(dataset, tmp_path / "actual", name, progress=False, memory=TINY_MEMORY)
    assert_same_files(tmp_path / "expected", tmp_path / "actual")


def scipys_rcm(dataset: GraphDataset) -> np.ndarray:
    """SciPy's reverse Cuthill-McKee of an undirected dataset (what ``rcm`` called before)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n, (indptr, indices, _) = dataset.meta.num_nodes, dataset.csr
    adjacency = csr_matrix((np.ones(len(indices), np.int8), np.asarray(indices), np.asarray(indptr)), shape=(n, n))
    return np.asarray(reverse_cuthill_mckee(adjacency, symmetric_mode=True))


def rcm_user_ids(dataset: GraphDataset, dst: Path) -> np.ndarray:
    return np.asarray(GraphDataset.open(reorder(dataset, dst, "rcm", progress=False).path).user_ids)


def test_reverse_cuthill_mckee_is_scipys_where_scipy_breaks_no_tie(tmp_path):
    """A ring with chords and a pendant node, stored both ways: one component, one node of lowest
    degree, so SciPy's order follows from its algorithm alone - and is ours."""
    from remotegnn.store import EdgePolicy
    from tests.remotegnn.conftest import write_dataset

    n = 300
    rng = np.random.default_rng(1)
    ring = rng.permutation(n)
    chords = rng.integers(0, n, (2, 200))
    src = np.concatenate([ring, chords[0], [n]])
    dst = np.concatenate([np.roll(ring, 1), chords[1], [ring[0]]])  # node n hangs off the ring
    dataset = write_dataset(tmp_path / "ring", src, dst, n + 1, policy=EdgePolicy(undirected=True))
    degree = np.diff(dataset.csr.indptr)
    assert degree.argmin() == n and (degree[:n] >= 2).all()
    assert np.array_equal(rcm_user_ids(dataset, tmp_path / "rcm"), scipys_rcm(dataset))


def test_reverse_cuthill_mckee_differs_from_scipys_only_where_its_quicksort_broke_ties(rmat, tmp_path):
    """On R-MAT, SciPy's order and ours differ only in where the isolated nodes go: each is a
    component of its own, started in the order SciPy's quicksort of equal degrees left them."""
    ours, scipys = rcm_user_ids(rmat, tmp_path / "rcm"), scipys_rcm(rmat)
    differ = np.flatnonzero(ours != scipys)
    assert len(differ) and (np.asarray(rmat.degree)[ours[differ]] == 0).all()
    assert np.array_equal(np.sort(ours[differ]), np.sort(scipys[differ]))


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
