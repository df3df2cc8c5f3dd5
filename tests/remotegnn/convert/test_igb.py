"""IGB260M's homogeneous layout (both the .npy files of the small sizes and the bare arrays of the
large ones) converts as IGB's own loader reads it: directed edges, float labels cast to class ids,
its 60/20/20 split by node order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.convert.igb import FEATURE_DIM, from_igb
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset

NODES, EDGES = 40, 160


def make_igb(root: Path, bare: bool = False) -> tuple[Path, dict[str, np.ndarray]]:
    folder = root / "small"
    paper, cites = folder / "processed" / "paper", folder / "processed" / "paper__cites__paper"
    paper.mkdir(parents=True)
    cites.mkdir(parents=True)
    rng = np.random.default_rng(5)
    src = rng.integers(0, NODES, EDGES)
    dst = (src + rng.integers(1, NODES, EDGES)) % NODES  # no self loops
    pairs = np.unique(np.stack([src, dst], axis=1), axis=0)
    arrays = {
        "feat": rng.standard_normal((NODES, FEATURE_DIM)).astype(np.float32),
        "label_19": rng.integers(0, 19, NODES).astype(np.float32),
        "label_2K": rng.integers(0, 2983, NODES).astype(np.float32),
        "edges": pairs,
    }
    for name, key in (("node_feat.npy", "feat"), ("node_label_19.npy", "label_19"), ("node_label_2K.npy", "label_2K")):
        if bare:  # IGB's large and full sizes: bare float32 under a .npy name
            arrays[key].tofile(paper / name)
        else:
            np.save(paper / name, arrays[key])
    np.save(cites / "edge_index.npy", pairs)
    return folder, arrays


@pytest.mark.parametrize("bare", [False, True], ids=["npy", "bare"])
@pytest.mark.parametrize("classes", [19, 2983])
def test_converts_as_the_igb_loader_reads_it(tmp_path, bare, classes):
    folder, arrays = make_igb(tmp_path, bare)
    ds = GraphDataset.open(from_igb(folder, tmp_path / "out", label_classes=classes).path, verify=True)
    np.testing.assert_array_equal(ds.edge_index(), arrays["edges"].T)  # (edges[:, 0], edges[:, 1]), directed
    np.testing.assert_array_equal(ds.features, arrays["feat"])
    label_key = "label_19" if classes == 19 else "label_2K"
    np.testing.assert_array_equal(ds.labels, arrays[label_key].astype(np.int64))
    n_train, n_val = int(NODES * 0.6), int(NODES * 0.2)
    assert ds.split("train").tolist() == list(range(n_train))
    assert ds.split("val").tolist() == list(range(n_train, n_train + n_val))
    assert ds.split("test").tolist() == list(range(n_train + n_val, NODES))
    assert not ds.meta.undirected and ds.meta.feature_dtype == "float32"


def test_bad_inputs(tmp_path):
    folder, _ = make_igb(tmp_path)
    with pytest.raises(UsageError, match="19 or 2983"):
        from_igb(folder, tmp_path / "a", label_classes=5)
    np.save(folder / "processed" / "paper" / "node_label_19.npy", np.zeros(NODES - 1, np.float32))
    with pytest.raises(ConvertError, match=r"node_label_19\.npy has 39 labels but there are 40 papers"):
        from_igb(folder, tmp_path / "b")
    (folder / "processed" / "paper" / "node_label_19.npy").write_bytes(b"\x00" * 3)
    with pytest.raises(ConvertError, match=r"not whole rows"):
        from_igb(folder, tmp_path / "c")
    assert not any((tmp_path / n).exists() for n in "abc")


HETERO = {"author": 30, "institute": 6, "fos": 9}
RELATIONS = (
    ("paper", "written_by", "author", 70),
    ("author", "affiliated_to", "institute", 25),
    ("paper", "topic", "fos", 50),
)


def make_igbh(root: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """IGBH's layout: the homogeneous files plus more node types, each with 1,024 features, and
    their [E, 2] edge files."""
    folder, arrays = make_igb(root)
    rng = np.random.default_rng(8)
    counts = {"paper": NODES, **HETERO}
    for node_type, count in HETERO.items():
        (folder / "processed" / node_type).mkdir()
        arrays[f"{node_type}_feat"] = rng.standard_normal((count, FEATURE_DIM)).astype(np.float32)
        np.save(folder / "processed" / node_type / "node_feat.npy", arrays[f"{node_type}_feat"])
    for src, rel, dst, count in RELATIONS:
        pairs = np.stack([rng.integers(0, counts[src], count), rng.integers(0, counts[dst], count)], axis=1)
        (folder / "processed" / f"{src}__{rel}__{dst}").mkdir()
        np.save(folder / "processed" / f"{src}__{rel}__{dst}" / "edge_index.npy", pairs)
        arrays[rel] = pairs
    return folder, arrays


def test_igbh_is_stored_heterogeneous(tmp_path):
    folder, arrays = make_igbh(tmp_path)
    ds = GraphDataset.open(from_igb(folder, tmp_path / "out").path, verify=True)
    hetero = ds.meta.hetero
    assert [(t.name, t.count) for t in hetero.node_types] == [("paper", NODES), *HETERO.items()]
    assert [(t.src, t.rel, t.dst) for t in hetero.edge_types] == [
        ("paper", "cites", "paper"),
        *((s, r, d) for s, r, d, _ in RELATIONS),
    ]
    offsets = {"paper": 0, "author": NODES, "institute": NODES + 30, "fos": NODES + 36}
    expected = [arrays["edges"]] + [arrays[r] + [offsets[s], offsets[d]] for s, r, d, _ in RELATIONS]
    np.testing.assert_array_equal(ds.edge_index(), np.concatenate(expected).T)
    np.testing.assert_array_equal(ds.features[:NODES], arrays["feat"])
    np.testing.assert_array_equal(ds.features[offsets["fos"] :], arrays["fos_feat"])
    np.testing.assert_array_equal(ds.labels[:NODES], arrays["label_19"].astype(np.int64))
    assert (ds.labels[NODES:] == -1).all() and ds.split("test").tolist() == list(range(32, NODES))


def test_igbh_ids_beyond_their_type_and_missing_types_are_named(tmp_path):
    folder, arrays = make_igbh(tmp_path)
    bad = arrays["affiliated_to"].copy()
    bad[4, 1] = HETERO["institute"]
    np.save(folder / "processed" / "author__affiliated_to__institute" / "edge_index.npy", bad)
    with pytest.raises(ConvertError, match=r"edge_index\.npy edge 4: target id 6 is outside \[0, 6\)"):
        from_igb(folder, tmp_path / "a")
    (folder / "processed" / "fos" / "node_feat.npy").unlink()
    with pytest.raises(
        ConvertError, match=r"paper__topic__fos.* links paper to fos, but .*fos/node_feat\.npy is missing"
    ):
        from_igb(folder, tmp_path / "b")
