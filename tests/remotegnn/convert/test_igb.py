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
    (folder / "processed" / "author").mkdir()
    with pytest.raises(ConvertError, match="is IGBH, the heterogeneous graph"):
        from_igb(folder, tmp_path / "d")
    assert not any((tmp_path / n).exists() for n in "abcd")
