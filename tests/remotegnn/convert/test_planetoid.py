"""Cora and CiteSeer from the Planetoid pickles match PyG's Planetoid dataset exactly; hostile or
broken pickles are refused."""

from __future__ import annotations

import hashlib
import pickle
import shutil
from collections import defaultdict

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.convert import from_planetoid
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset


def digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


# PyG 2.8.1's read_planetoid_data on the same files (run once with scipy installed): node count,
# edges, feature dim, classes, label counts, and digests of the sorted edge keys (src * N + dst,
# int64), of x (float32) and of y (int64).
PYG = {
    "cora": dict(
        nodes=2708,
        edges=10556,
        dim=1433,
        classes=7,
        counts=[351, 217, 418, 818, 426, 298, 180],
        train=140,
        edge_keys="8906c6acfa74b103",
        x="f0faab5177bcc12f",
        y="d0018d7ffd314eb2",
    ),
    "citeseer": dict(
        nodes=3327,
        edges=9104,
        dim=3703,
        classes=6,
        counts=[264, 590, 668, 701, 596, 508],
        train=120,
        edge_keys="e556e4a228a34472",
        x="cb9a425333dd8d1a",
        y="448f8c04e02516b2",
    ),
}


@pytest.fixture(scope="module")
def planetoid(shared_datasets):
    return shared_datasets / "planetoid"


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_matches_pyg_planetoid(planetoid, tmp_path, name):
    want = PYG[name]
    result = from_planetoid(planetoid, tmp_path / name, name=name.upper())
    ds = GraphDataset.open(result.path, verify=True)
    meta = ds.meta
    assert (meta.num_nodes, meta.num_edges, meta.feature_dim, meta.num_classes) == (
        want["nodes"],
        want["edges"],
        want["dim"],
        want["classes"],
    )
    assert meta.undirected and meta.name == name and result.warnings == []
    assert result.edges.self_loops_dropped + result.edges.duplicates_dropped > 0  # the raw lists have both
    edges = ds.edge_index()
    assert digest(np.sort(edges[0] * meta.num_nodes + edges[1])) == want["edge_keys"]
    assert digest(np.asarray(ds.features)) == want["x"]
    assert digest(np.asarray(ds.labels)) == want["y"]
    assert np.bincount(ds.labels).tolist() == want["counts"]
    assert ds.split("train").tolist() == list(range(want["train"]))
    assert ds.split("val").tolist() == list(range(want["train"], want["train"] + 500))
    assert len(ds.split("test")) == 1000


def test_citeseer_isolated_test_gaps_get_zero_rows(planetoid, tmp_path):
    ds = GraphDataset.open(from_planetoid(planetoid, tmp_path / "c", name="citeseer").path)
    test = set(ds.split("test").tolist())
    gaps = [v for v in range(int(min(test)), int(max(test)) + 1) if v not in test]
    assert len(gaps) == 15
    assert not np.asarray(ds.features)[gaps].any() and not ds.labels[gaps].any()
    assert int((ds.degree == 0).sum()) == 48  # PyG's CiteSeer has 48 isolated nodes (the gaps are not among them)


def test_float16_and_policy_options(planetoid, tmp_path):
    from remotegnn.convert import PolicyOverrides

    result = from_planetoid(
        planetoid,
        tmp_path / "c",
        name="cora",
        dtype="float16",
        policy=PolicyOverrides(undirected=False, duplicates="keep"),
    )
    assert result.meta.feature_dtype == "float16" and not result.meta.undirected
    assert result.meta.num_edges == 10858  # the adjacency lists as published, no self loops in Cora


def copy_set(planetoid, folder, name="cora"):
    folder.mkdir()
    for path in planetoid.glob(f"ind.{name}.*"):
        shutil.copy(path, folder / path.name)
    return folder


def test_name_choice(planetoid, tmp_path):
    with pytest.raises(UsageError, match="pass --name.*citeseer, cora"):
        from_planetoid(planetoid, tmp_path / "x")
    with pytest.raises(UsageError, match="Did you mean cora"):
        from_planetoid(planetoid, tmp_path / "x", name="corra")
    only = copy_set(planetoid, tmp_path / "only")
    assert from_planetoid(only, tmp_path / "auto").meta.name == "cora"


def test_missing_and_broken_files(planetoid, tmp_path):
    folder = copy_set(planetoid, tmp_path / "p")
    (folder / "ind.cora.ty").unlink()
    with pytest.raises(ConvertError, match=r"incomplete, missing ind\.cora\.ty"):
        from_planetoid(folder, tmp_path / "out", name="cora")
    (folder / "ind.cora.ty").write_bytes(b"\x80\x02garbage")
    with pytest.raises(ConvertError, match=r"ind\.cora\.ty is not a readable Planetoid pickle"):
        from_planetoid(folder, tmp_path / "out", name="cora")
    shutil.copy(planetoid / "ind.cora.ty", folder / "ind.cora.ty")
    (folder / "ind.cora.test.index").write_text("1708\n17x9\n")
    with pytest.raises(ConvertError, match=r"ind\.cora\.test\.index:2: '17x9' is not a node id"):
        from_planetoid(folder, tmp_path / "out", name="cora")
    shutil.copy(planetoid / "ind.cora.y", folder / "ind.cora.ty")  # 140 label rows for 1,000 test rows
    shutil.copy(planetoid / "ind.cora.test.index", folder / "ind.cora.test.index")
    with pytest.raises(ConvertError, match=r"ind\.cora\.tx has 1,000 rows but .*ind\.cora\.ty has 140"):
        from_planetoid(folder, tmp_path / "out", name="cora")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))


def test_a_pickle_naming_other_code_is_refused_unrun(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    for part in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index"):
        (folder / f"ind.toy.{part}").write_bytes(b"")
    marker = tmp_path / "ran"
    (folder / "ind.toy.x").write_bytes(pickle.dumps(_Evil(marker), protocol=2))
    with pytest.raises(ConvertError, match=r"ind\.toy\.x asks to unpickle io\.open.*refusing"):
        from_planetoid(folder, tmp_path / "out")
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_a_synthetic_citeseer_matches_pygs_own_reader(tmp_path):
    """A small set with CiteSeer's quirks (test ids shuffled, with gaps; a self loop, a duplicate,
    a one-way edge) read by PyG's read_planetoid_data and by ours: identical."""
    sparse = pytest.importorskip("scipy.sparse")
    from torch_geometric.io.planetoid import read_planetoid_data

    rng = np.random.default_rng(0)
    n_train, n_all, classes, dim = 4, 510, 3, 6
    test_ids = np.array([517, 510, 515, 511, 513])  # 512, 514, 516 are gaps

    def onehot(n):
        return np.eye(classes, dtype=np.int32)[rng.integers(0, classes, n)]

    def csr(n):
        return sparse.csr_matrix((rng.random((n, dim)) < 0.4).astype(np.float32))

    parts = {
        "x": csr(n_train),
        "y": onehot(n_train),
        "allx": csr(n_all),
        "ally": onehot(n_all),
        "tx": csr(len(test_ids)),
        "ty": onehot(len(test_ids)),
    }
    graph = defaultdict(list, {v: [int(u) for u in rng.integers(0, 518, 3)] for v in range(518)})
    graph[3] += [3, graph[3][0]]  # a self loop and a duplicate
    folder = tmp_path / "p"
    folder.mkdir()
    for part, value in {**parts, "graph": graph}.items():
        (folder / f"ind.citeseer.{part}").write_bytes(pickle.dumps(value, protocol=2))
    (folder / "ind.citeseer.test.index").write_text("".join(f"{i}\n" for i in test_ids))

    want = read_planetoid_data(str(folder), "citeseer")
    ds = GraphDataset.open(from_planetoid(folder, tmp_path / "out").path)
    assert ds.meta.num_nodes == want.num_nodes == 518
    assert np.array_equal(np.asarray(ds.features), want.x.numpy())
    assert np.array_equal(ds.labels, want.y.numpy())
    for split in ("train", "val", "test"):
        assert np.array_equal(ds.split(split), np.flatnonzero(want[f"{split}_mask"].numpy()))
    # PyG keeps the lists one-way where they are one-way; ours is their symmetric closure.
    pyg_pairs = {tuple(sorted(e)) for e in want.edge_index.t().tolist()}
    ours = ds.edge_index().T.tolist()
    assert {tuple(sorted(e)) for e in ours} == pyg_pairs and len(ours) == 2 * len(pyg_pairs)


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))
