"""musae-facebook and twitch-DE convert with the published counts; a hand-made MUSAE folder checks
the multi-hot features, the class numbering, the random split and the errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.convert import from_musae
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset


@pytest.mark.parametrize(
    "folder, dtype, want",
    [
        # The shared README's pairs, stored both ways; Facebook lists 179 self loops, which are dropped.
        (
            "twitch-DE",
            "float32",
            dict(
                nodes=9498,
                edges=2 * 153138,
                loops=0,
                dim=3170,
                classes=["False", "True"],
                counts=[3756, 5742],
                splits=[5698, 1899, 1901],
            ),
        ),
        (
            "musae-facebook",
            "float16",
            dict(
                nodes=22470,
                edges=2 * (171002 - 179),
                loops=179,
                dim=4714,
                classes=["company", "government", "politician", "tvshow"],
                counts=[6495, 6880, 5768, 3327],
                splits=[13482, 4494, 4494],
            ),
        ),
    ],
)
def test_real_graphs(shared_datasets, tmp_path, folder, dtype, want):
    result = from_musae(shared_datasets / folder, tmp_path / "ds", dtype=dtype)
    ds = GraphDataset.open(result.path)
    meta = ds.meta
    assert (meta.num_nodes, meta.num_edges, meta.feature_dim, meta.feature_dtype) == (
        want["nodes"],
        want["edges"],
        want["dim"],
        dtype,
    )
    assert result.edges.self_loops_dropped == want["loops"] and result.edges.duplicates_dropped == 0
    assert meta.undirected and result.classes == want["classes"] and meta.num_classes == len(want["classes"])
    assert np.bincount(ds.labels).tolist() == want["counts"]
    splits = [ds.split(s) for s in ("train", "val", "test")]
    assert [len(s) for s in splits] == want["splits"]
    assert len(np.unique(np.concatenate(splits))) == meta.num_nodes  # disjoint and complete
    row_sums = np.asarray(ds.features[:200], dtype=np.float32).sum(axis=1)
    assert set(np.unique(np.asarray(ds.features[:200]))) <= {0.0, 1.0} and row_sums.min() >= 1


def write_musae(folder, *, edges="from,to\n0,1\n1,2\n2,0\n2,2\n", features=None, target=None):
    """A four-node Twitch-style folder (new_id is the node id, the label column is mature)."""
    folder.mkdir(exist_ok=True)
    (folder / "g_edges.csv").write_text(edges)
    features = features or {"0": [0, 3], "1": [1, 1], "2": [], "3": [4]}
    (folder / "g_features.json").write_text(features if isinstance(features, str) else json.dumps(features))
    (folder / "g_target.csv").write_text(
        target or "id,mature,new_id\n900,True,2\n901,False,0\n902,True,3\n903,True,1\n"
    )
    return folder


def test_small_graph_exactly(tmp_path):
    result = from_musae(write_musae(tmp_path / "m"), tmp_path / "ds", split_ratios=(0.5, 0.25, 0.25), seed=3)
    ds = GraphDataset.open(result.path)
    assert result.meta.name == "g" and result.edges.self_loops_dropped == 1
    assert sorted(map(tuple, ds.edge_index().T.tolist())) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert np.asarray(ds.features).tolist() == [[1, 0, 0, 1, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 1]]
    assert ds.labels.tolist() == [0, 1, 1, 1]  # new_id order; False < True
    assert [len(ds.split(s)) for s in ("train", "val", "test")] == [2, 1, 1]
    again = from_musae(tmp_path / "m", tmp_path / "again", split_ratios=(0.5, 0.25, 0.25), seed=3)
    assert again.meta == result.meta  # same input and seed: the same files, byte for byte (checksums included)
    none = GraphDataset.open(from_musae(tmp_path / "m", tmp_path / "nosplit", split_ratios=None).path)
    assert none.meta.splits == []


@pytest.mark.parametrize(
    "files, message",
    [
        (dict(features='{"0": [1], "1": [2],\n "2": [3}'), r"g_features\.json:2:\d+: invalid JSON"),
        (dict(features={"0": [1], "x": [2]}), r"g_features\.json: key 'x' is not a node id"),
        (dict(features={"0": [1], "1": [-2]}), r"node 1 lists \[-2\]; feature ids must be non-negative"),
        (dict(features={"0": [1], "1": 7}), r"node 1 maps to int, expected a list"),
        (dict(features={"0": [1], "9": [2]}), r"node 9 is outside \[0, 4\)"),
        (
            dict(target="id,views,new_id\n1,2,0\n"),
            r"g_target\.csv: no label column \(page_type, mature.*--label-column",
        ),
        (
            dict(target="id,mature,new_id\n1,True,0\n2,False,zero\n"),
            r"g_target\.csv:3: expected 3 fields with an integer new_id",
        ),
        (dict(target="id,mature,new_id\n1,True,0\n2,False,5\n"), r"g_target\.csv:3: new_id 5 is outside \[0, 2\)"),
        (dict(target="id,mature,new_id\n1,True,0\n2,False,0\n"), r"node 1 has no row"),
        (dict(edges="from,to\n0,1\n1,x\n"), r"g_edges\.csv:3: field 1 is 'x', not an integer"),
        (dict(edges="from,to\n0,1\n1,4\n"), r"target node id 4 is outside \[0, 4\)"),
    ],
)
def test_bad_inputs_name_the_file_and_leave_nothing(tmp_path, files, message):
    with pytest.raises(ConvertError, match=message):
        from_musae(write_musae(tmp_path / "m", **files), tmp_path / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_folder_and_name_errors(tmp_path):
    folder = write_musae(tmp_path / "m")
    (folder / "g_features.json").unlink()
    with pytest.raises(ConvertError, match=r"g_features\.json \(or g\.json\) does not exist"):
        from_musae(folder, tmp_path / "ds")
    write_musae(folder)
    (folder / "h_edges.csv").write_text("a,b\n")
    with pytest.raises(UsageError, match="pass --name.*g, h"):
        from_musae(folder, tmp_path / "ds")
    with pytest.raises(UsageError, match="unknown MUSAE graph 'gg'"):
        from_musae(folder, tmp_path / "ds", name="gg")
    with pytest.raises(ConvertError, match="holds no MUSAE graph"):
        from_musae(tmp_path, tmp_path / "ds")
    result = from_musae(folder, tmp_path / "ds", name="G", label_column="id")  # integer labels are class ids
    assert result.meta.num_classes == 904 and "classes" not in result.meta.source
