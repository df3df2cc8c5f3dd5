"""OGB node property datasets in both published layouts convert to what the ``ogb`` package's own
loader returns, value by value; broken files are named and leave nothing behind."""

from __future__ import annotations

import gzip
import zipfile
from pathlib import Path

import numpy as np
import pytest

from foundation.errors import DiskFullError
from remotegnn.convert import ConvertWarning
from remotegnn.convert.ogb import from_ogb
from remotegnn.errors import ConvertError
from remotegnn.store import EdgePolicy, GraphDataset

NODES, EDGES, DIM = 50, 300, 6


def _graph(seed=0):
    rng = np.random.default_rng(seed)
    pairs = set()
    while len(pairs) < EDGES:  # no loops, no repeats: the stored graph is then exactly the input
        s, t = (int(v) for v in rng.integers(0, NODES, 2))
        if s != t and (s, t) not in pairs and (t, s) not in pairs:
            pairs.add((s, t))
    edge_index = np.array(sorted(pairs), dtype=np.int64).T
    return rng, edge_index, rng.standard_normal((NODES, DIM)).astype(np.float32)


def _csv_gz(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as handle:
        for row in rows:
            handle.write(",".join(str(v) for v in np.atleast_1d(row)) + "\n")


def _split(folder: Path, scheme: str) -> dict[str, np.ndarray]:
    ids = np.random.default_rng(3).permutation(NODES)
    split = {"train": ids[:30], "valid": ids[30:40], "test": ids[40:]}
    for name, values in split.items():
        _csv_gz(folder / "split" / scheme / f"{name}.csv.gz", values)
    return split


def make_binary(root: Path, compressed: bool = True) -> Path:
    """ogbn-papers100M's layout: raw/data.npz, raw/node-label.npz (NaN = unlabelled), split/time."""
    folder = root / "ogbn_papers100M"
    (folder / "raw").mkdir(parents=True)
    rng, edge_index, feat = _graph()
    save = np.savez_compressed if compressed else np.savez
    save(
        folder / "raw" / "data.npz",
        edge_index=edge_index,
        num_nodes_list=np.array([NODES]),
        num_edges_list=np.array([EDGES]),
        node_feat=feat,
        node_year=rng.integers(1990, 2020, (NODES, 1)),
    )
    labels = rng.integers(0, 172, (NODES, 1)).astype(np.float32)
    labels[rng.random(NODES) < 0.3] = np.nan
    np.savez_compressed(folder / "raw" / "node-label.npz", node_label=labels)
    _split(folder, "time")
    (folder / "RELEASE_v1.txt").write_text("")
    return folder


def make_csv(root: Path, name: str = "ogbn_products") -> Path:
    """ogbn-products' layout: gzip CSV tables, each undirected edge listed once."""
    folder = root / name
    raw = folder / "raw"
    rng, edge_index, feat = _graph(1)
    _csv_gz(raw / "edge.csv.gz", edge_index.T)
    _csv_gz(raw / "num-node-list.csv.gz", [NODES])
    _csv_gz(raw / "num-edge-list.csv.gz", [EDGES])
    _csv_gz(raw / "node-feat.csv.gz", feat)
    _csv_gz(raw / "node-label.csv.gz", rng.integers(0, 47, NODES))
    _split(folder, "sales_ranking")
    (folder / "RELEASE_v1.txt").write_text("")
    return folder


def ogb_loader(folder: Path, binary: bool, add_inverse_edge: bool):
    """The ogb package's NodePropPredDataset on the folder (its meta_dict names the layout)."""
    dataset_module = pytest.importorskip("ogb.nodeproppred.dataset", reason="the ogb package is not installed")
    meta = {
        "dir_path": str(folder),
        "version": 1,
        "download_name": folder.name,
        "num tasks": 1,
        "task type": "multiclass classification",
        "eval metric": "acc",
        "num classes": 172,
        "is hetero": "False",
        "binary": str(binary),
        "add_inverse_edge": str(add_inverse_edge),
        "additional node files": "None",
        "additional edge files": "None",
        "split": "time" if binary else "sales_ranking",
    }
    (folder / "processed").mkdir(exist_ok=True)
    dataset = dataset_module.NodePropPredDataset(name=folder.name, meta_dict=meta)
    graph, labels = dataset[0]
    return graph, labels, dataset.get_idx_split()


def _pairs(edge_index: np.ndarray) -> list[tuple[int, int]]:
    return sorted(map(tuple, np.asarray(edge_index).T.tolist()))


@pytest.mark.parametrize("compressed", [True, False], ids=["compressed", "stored"])
def test_binary_layout_matches_the_ogb_loader(tmp_path, compressed):
    folder = make_binary(tmp_path, compressed)
    with pytest.warns(ConvertWarning, match="not carried over: node_year"):
        result = from_ogb(folder, tmp_path / "out")
    ds = GraphDataset.open(result.path, verify=True)
    graph, labels, split = ogb_loader(folder, binary=True, add_inverse_edge=False)
    assert not ds.meta.undirected and ds.meta.num_nodes == graph["num_nodes"]
    np.testing.assert_array_equal(ds.edge_index(), graph["edge_index"])
    np.testing.assert_array_equal(ds.features, graph["node_feat"])
    expected = np.where(np.isnan(labels[:, 0]), -1, labels[:, 0]).astype(np.int64)
    np.testing.assert_array_equal(ds.labels, expected)
    for ours, theirs in (("train", "train"), ("val", "valid"), ("test", "test")):
        np.testing.assert_array_equal(ds.split(ours), np.sort(split[theirs]))


def test_csv_layout_matches_the_ogb_loader_with_its_inverse_edges(tmp_path):
    folder = make_csv(tmp_path)
    ds = GraphDataset.open(from_ogb(folder, tmp_path / "out").path, verify=True)
    graph, labels, split = ogb_loader(folder, binary=False, add_inverse_edge=True)
    assert ds.meta.undirected and ds.meta.num_edges == graph["edge_index"].shape[1] == 2 * EDGES
    assert _pairs(ds.edge_index()) == _pairs(graph["edge_index"])
    np.testing.assert_allclose(ds.features, graph["node_feat"], rtol=1e-6)
    np.testing.assert_array_equal(ds.labels, labels[:, 0])
    np.testing.assert_array_equal(ds.split("val"), np.sort(split["valid"]))


def test_csv_layout_of_a_directed_dataset_is_stored_as_given(tmp_path):
    folder = make_csv(tmp_path, "ogbn_arxiv")
    ds = GraphDataset.open(from_ogb(folder, tmp_path / "out").path)
    graph, _, _ = ogb_loader(folder, binary=False, add_inverse_edge=False)
    assert not ds.meta.undirected
    np.testing.assert_array_equal(ds.edge_index(), graph["edge_index"])
    both = GraphDataset.open(from_ogb(folder, tmp_path / "u", policy=EdgePolicy(undirected=True)).path)
    assert both.meta.num_edges == 2 * EDGES


def _rewrite_npz(path: Path, **changes) -> None:
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    np.savez_compressed(path, **{**arrays, **changes})


def _truncate(path: Path, keep: float = 0.6) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


BAD_BINARY = {
    "a truncated archive": (lambda f: _truncate(f / "raw" / "data.npz"), r"data\.npz"),
    "a node id out of range": (
        lambda f: _rewrite_npz(f / "raw" / "data.npz", edge_index=np.array([[0, 1] * 150, [1, NODES + 5] * 150])),
        rf"data\.npz\[edge_index\] edge 1: target node id {NODES + 5} is outside",
    ),
    "labels of the wrong length": (
        lambda f: np.savez_compressed(f / "raw" / "node-label.npz", node_label=np.zeros((NODES - 1, 1))),
        r"node-label\.npz\[node_label\] has shape \[49, 1\]",
    ),
    "a split naming a missing node": (
        lambda f: _csv_gz(f / "split" / "time" / "valid.csv.gz", [3, 4, NODES]),
        rf"valid\.csv\.gz line 3: node {NODES} does not exist",
    ),
    "two graphs": (
        lambda f: _rewrite_npz(f / "raw" / "data.npz", num_nodes_list=np.array([25, 25])),
        r"num_nodes_list\] holds 2 .* one graph",
    ),
    "a fractional label": (
        lambda f: np.savez_compressed(f / "raw" / "node-label.npz", node_label=np.full((NODES, 1), 1.5)),
        r"node_label\] row 0: label 1\.5 is not a class id",
    ),
}


BAD_CSV = {
    "a row with three fields": (
        lambda f: _csv_gz(f / "raw" / "edge.csv.gz", [[0, 1], [1, 2], [2, 3, 4]]),
        r"edge\.csv\.gz:3: 3 fields where the first row has 2",
    ),
    "an id out of range": (
        lambda f: _csv_gz(f / "raw" / "edge.csv.gz", [[0, 1]] * 5 + [[2, NODES]] + [[3, 4]] * (EDGES - 6)),
        rf"edge\.csv\.gz:6: target node id {NODES} is outside",
    ),
    "fewer edges than announced": (
        lambda f: _csv_gz(f / "raw" / "edge.csv.gz", [[0, 1], [1, 2]]),
        r"edge\.csv\.gz:3: the edges end after 2 of the 300 announced",
    ),
    "a truncated gzip file": (
        lambda f: _truncate(f / "raw" / "node-feat.csv.gz", 0.5),
        r"node-feat\.csv\.gz is corrupt",
    ),
    "labels of the wrong length": (
        lambda f: _csv_gz(f / "raw" / "node-label.csv.gz", range(NODES + 1)),
        r"node-label\.csv\.gz has 51 rows but the graph has 50 nodes",
    ),
}


BAD_INPUTS = {**{f"binary, {k}": (make_binary, *v) for k, v in BAD_BINARY.items()}}
BAD_INPUTS |= {f"CSV, {k}": (make_csv, *v) for k, v in BAD_CSV.items()}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_bad_input_names_the_file_and_row_and_leaves_nothing(tmp_path, case):
    make, breaks, message = BAD_INPUTS[case]
    folder = make(tmp_path)
    breaks(folder)
    with pytest.raises(ConvertError, match=message):
        from_ogb(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")], "temporary files left behind"


def test_a_corrupt_member_is_named(tmp_path):
    folder = make_binary(tmp_path, compressed=False)
    path = folder / "raw" / "data.npz"
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("node_feat.npy")
    data = bytearray(path.read_bytes())
    data[info.header_offset + 200] ^= 0xFF  # inside node_feat's data: its CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(ConvertError, match=r"data\.npz"):
        from_ogb(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, small_disk):
    folder = make_binary(tmp_path)
    disk = small_disk("8k")
    with pytest.raises(DiskFullError, match=r"small-disk is full \(No space left on device\); nothing was written"):
        from_ogb(folder, disk / "out")
    assert list(disk.iterdir()) == []
