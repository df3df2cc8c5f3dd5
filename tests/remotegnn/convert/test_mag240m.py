"""MAG240M's layout converts to one id space of papers, authors and institutions with float16 paper
features, NaN labels as unlabelled, and its split read from split_dict.pt without unpickling
arbitrary objects."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from remotegnn.convert.mag240m import from_mag240m
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset

COUNTS = {"paper": 30, "author": 20, "institution": 5}
DIM = 768


def make_mag(root: Path) -> tuple[Path, dict]:
    torch = pytest.importorskip("torch", reason="torch writes the .pt files of the layout")
    folder = root / "mag240m_kddcup2021"
    processed = folder / "processed"
    rng = np.random.default_rng(2)
    arrays = {
        "feat": rng.standard_normal((COUNTS["paper"], DIM)).astype(np.float16),
        "label": np.where(rng.random(COUNTS["paper"]) < 0.5, np.nan, rng.integers(0, 153, COUNTS["paper"])),
        "writes": np.stack([rng.integers(0, COUNTS["author"], 50), rng.integers(0, COUNTS["paper"], 50)]),
        "affiliated_with": np.stack(
            [rng.integers(0, COUNTS["author"], 10), rng.integers(0, COUNTS["institution"], 10)]
        ),
        "cites": np.stack([rng.integers(0, COUNTS["paper"], 60), rng.integers(0, COUNTS["paper"], 60)]),
    }
    (processed / "paper").mkdir(parents=True)
    np.save(processed / "paper" / "node_feat.npy", arrays["feat"])
    np.save(processed / "paper" / "node_label.npy", arrays["label"].astype(np.float32))
    np.save(processed / "paper" / "node_year.npy", rng.integers(1990, 2020, COUNTS["paper"]))
    for (src, rel, dst), key in (
        (("author", "writes", "paper"), "writes"),
        (("author", "affiliated_with", "institution"), "affiliated_with"),
        (("paper", "cites", "paper"), "cites"),
    ):
        (processed / f"{src}___{rel}___{dst}").mkdir()
        np.save(processed / f"{src}___{rel}___{dst}" / "edge_index.npy", arrays[key])
    torch.save({**COUNTS, "num_classes": 153}, folder / "meta.pt")
    split = {
        "train": np.array([0, 2, 4]),
        "valid": np.array([1, 3]),
        "test-dev": np.array([5]),
        "test-challenge": np.array([6]),
    }
    torch.save(split, folder / "split_dict.pt")
    (folder / "RELEASE_v1.txt").write_text("")
    return root, {**arrays, "split": split}


def test_converts_the_published_layout(tmp_path):
    root, arrays = make_mag(tmp_path)
    result = from_mag240m(root, tmp_path / "out")
    ds = GraphDataset.open(result.path, verify=True)
    hetero = ds.meta.hetero
    assert [(t.name, t.count) for t in hetero.node_types] == list(COUNTS.items())
    assert [(t.src, t.rel, t.dst) for t in hetero.edge_types] == [
        ("author", "writes", "paper"),
        ("author", "affiliated_with", "institution"),
        ("paper", "cites", "paper"),
    ]
    assert ds.meta.feature_dtype == "float16" and ds.meta.feature_dim == DIM
    np.testing.assert_array_equal(ds.features[: COUNTS["paper"]], arrays["feat"])
    assert not ds.features[COUNTS["paper"] :].any(), "authors and institutions have no features"
    offsets = {"paper": 0, "author": 30, "institution": 50}
    expected = np.concatenate(
        [
            arrays["writes"] + [[offsets["author"]], [offsets["paper"]]],
            arrays["affiliated_with"] + [[offsets["author"]], [offsets["institution"]]],
            arrays["cites"],
        ],
        axis=1,
    )
    np.testing.assert_array_equal(ds.edge_index(), expected)
    labels = np.where(np.isnan(arrays["label"]), -1, arrays["label"]).astype(np.int64)
    np.testing.assert_array_equal(ds.labels[: COUNTS["paper"]], labels)
    assert (ds.labels[COUNTS["paper"] :] == -1).all()
    assert ds.split("train").tolist() == [0, 2, 4] and ds.split("val").tolist() == [1, 3]
    assert ds.split("test").tolist() == [5]  # test-dev: test-challenge's labels are withheld


def test_a_split_file_that_would_run_code_is_refused(tmp_path):
    root, _ = make_mag(tmp_path)
    path = root / "mag240m_kddcup2021" / "split_dict.pt"
    with zipfile.ZipFile(path) as archive:
        names = {n: archive.read(n) for n in archive.namelist()}
    pkl = next(n for n in names if n.endswith("data.pkl"))
    names[pkl] = pickle.dumps({"train": __import__("os").getcwd})  # names os.getcwd, a callable
    with zipfile.ZipFile(path, "w") as archive:
        for n, data in names.items():
            archive.writestr(n, data)
    with pytest.raises(ConvertError, match=r"split_dict\.pt holds a posix\.getcwd"):
        from_mag240m(root, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_id_beyond_its_node_type_is_refused(tmp_path):
    root, arrays = make_mag(tmp_path)
    bad = arrays["affiliated_with"].copy()
    bad[1, 3] = COUNTS["institution"]  # institution 5 of 5: in the shared space the first paper... of nothing
    np.save(
        root / "mag240m_kddcup2021" / "processed" / "author___affiliated_with___institution" / "edge_index.npy", bad
    )
    with pytest.raises(ConvertError, match=r"edge_index\.npy edge 3: target id 5 is outside \[0, 5\)"):
        from_mag240m(root, tmp_path / "out")


def test_split_dir_replaces_the_split(tmp_path):
    root, _ = make_mag(tmp_path)
    split = tmp_path / "split"
    split.mkdir()
    np.save(split / "train.npy", np.array([7, 8]))
    ds = GraphDataset.open(from_mag240m(root, tmp_path / "out", split_dir=split).path)
    assert ds.meta.splits == ["train"] and ds.split("train").tolist() == [7, 8]
