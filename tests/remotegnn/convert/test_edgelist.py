"""Edge-list text files: sniffing, columns, blocks, features and labels files, exact file:line errors,
and no partial output when a failure comes mid-write."""

from __future__ import annotations

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.convert import ConvertWarning, PolicyOverrides, from_edgelist
from remotegnn.convert._table import read_table, sniff
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset

pytestmark = pytest.mark.filterwarnings("ignore::remotegnn.convert.ConvertWarning")


def test_csv_with_header_and_named_columns(tmp_path):
    (tmp_path / "e.csv").write_text("weight,dst,src\n0.5,1,0\n0.1,2,1\n0.3,2,1\n0.2,0,0\n")
    result = from_edgelist(tmp_path / "e.csv", tmp_path / "ds", columns=("src", "dst"))
    ds = GraphDataset.open(result.path)
    assert ds.edge_index().tolist() == [[0, 1], [1, 2]] and ds.meta.num_nodes == 3 and ds.meta.name == "e"
    assert (result.edges.self_loops_dropped, result.edges.duplicates_dropped) == (1, 1)
    assert ds.meta.feature_dim == 1 and np.all(np.asarray(ds.features) == 1)
    assert ds.meta.num_classes == 0 and ds.meta.splits == []


def test_snap_style_whitespace_comments_and_options(tmp_path):
    (tmp_path / "e.txt").write_text("# Directed graph\n# FromNodeId\tToNodeId\n0\t1\n\n1\t2\n2\t0\n")
    result = from_edgelist(tmp_path / "e.txt", tmp_path / "ds", num_nodes=6, policy=PolicyOverrides(undirected=True))
    ds = GraphDataset.open(result.path)
    assert ds.meta.num_nodes == 6 and ds.meta.undirected and ds.meta.num_edges == 6
    (tmp_path / "s.txt").write_text("1 2  \n 3   4\n")
    assert GraphDataset.open(from_edgelist(tmp_path / "s.txt", tmp_path / "s").path).edge_index().tolist() == [
        [1, 3],
        [2, 4],
    ]
    (tmp_path / "semi.csv").write_text("a;b\n0;1\n")
    assert from_edgelist(tmp_path / "semi.csv", tmp_path / "semi", delimiter=";").meta.num_edges == 1


def test_features_and_labels_files(tmp_path):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n2,3\n")
    np.save(tmp_path / "x.npy", np.arange(8, dtype=np.float16).reshape(4, 2))
    (tmp_path / "x.csv").write_text("f0,f1,f2\n0.5,1,2\n3,4,5\n6,7,8\n9,10,11e3\n")
    (tmp_path / "y.txt").write_text("cat\ndog\ncat\nbird\n")
    (tmp_path / "y.csv").write_text("label\n2\n0\n-1\n1\n")
    ds = GraphDataset.open(
        from_edgelist(tmp_path / "e.csv", tmp_path / "a", features=tmp_path / "x.npy", labels=tmp_path / "y.txt").path
    )
    assert ds.meta.feature_dtype == "float16" and np.array_equal(ds.features, np.arange(8).reshape(4, 2))
    assert ds.labels.tolist() == [1, 2, 1, 0] and ds.meta.num_classes == 3
    assert "classes bird=0, cat=1, dog=2" in ds.meta.source
    result = from_edgelist(
        tmp_path / "e.csv",
        tmp_path / "b",
        features=tmp_path / "x.csv",
        labels=tmp_path / "y.csv",
        split_ratios=(0.6, 0.2, 0.2),
        dtype="float16",
    )
    ds = GraphDataset.open(result.path)
    assert np.asarray(ds.features, dtype=np.float32)[0].tolist() == [0.5, 1, 2] and ds.labels.tolist() == [2, 0, -1, 1]
    assert sum(len(ds.split(s)) for s in ("train", "val", "test")) == 3  # the unlabelled node is in no split
    assert not any("float16" in w for w in result.warnings)
    result = from_edgelist(tmp_path / "e.csv", tmp_path / "c", features=tmp_path / "x.csv", dtype="float16")
    x = np.asarray(GraphDataset.open(result.path).features)
    assert x.dtype == np.float16 and x[3, 2] == 11e3
    (tmp_path / "big.csv").write_text("1\n2\n3\n7e4\n")
    result = from_edgelist(tmp_path / "e.csv", tmp_path / "d", features=tmp_path / "big.csv", dtype="float16")
    assert any("1 feature values exceed float16's range" in w for w in result.warnings)


def test_blocks_keep_line_numbers_across_boundaries(tmp_path):
    lines = [f"{i},{(i * 7) % 1000}" for i in range(1000)]
    lines[876] = "876,x7"
    path = tmp_path / "e.csv"
    path.write_text("src,dst\n" + "\n".join(lines) + "\n")
    fmt = sniff(path, "edge list")
    with pytest.raises(ConvertError, match=r"e\.csv:878: field 1 is 'x7', not an integer \(edge list\): '876,x7'"):
        read_table(path, fmt, np.int64, [0, 1], "edge list", block_bytes=100)
    lines[876] = "876,5"
    path.write_text("src,dst\n" + "\n".join(lines))  # no newline at the end
    edges = read_table(path, fmt, np.int64, [0, 1], "edge list", block_bytes=64)
    assert edges.shape == (1000, 2) and edges[-1].tolist() == [999, (999 * 7) % 1000] and edges[876, 1] == 5
    wide = tmp_path / "x.csv"
    wide.write_text("1,2\n3,4\n" * 20 + "5,6,7\n" * 20)  # each block is consistent; the file is not
    with pytest.raises(ConvertError, match=r"x\.csv:41: 3 fields where the first row has 2"):
        read_table(wide, sniff(wide, "features"), np.float32, None, "features", block_bytes=64)
    long_line = tmp_path / "long.csv"
    long_line.write_text("0," + "0" * 300 + "1\n2,3\n")
    assert read_table(long_line, sniff(long_line, "e"), np.int64, [0, 1], "e", block_bytes=16).tolist() == [
        [0, 1],
        [2, 3],
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("0,1\n1\n", r"e\.csv:2: 1 fields, column 1 is missing"),
        ("0,1\n1,2.5\n", r"e\.csv:2: field 1 is '2\.5', not an integer"),
        ("0,1\n-1,2\n", r"source node id -1 is outside \[0, 3\)"),
        ("# only a comment\n", r"e\.csv holds no data lines"),
        ("0,1\n\xff\xfe,1\n", r"e\.csv:2: not UTF-8 text"),
    ],
)
def test_malformed_edge_files(tmp_path, text, message):
    (tmp_path / "e.csv").write_bytes(text.encode("latin1"))
    with pytest.raises(ConvertError, match=message):
        from_edgelist(tmp_path / "e.csv", tmp_path / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.csv"]


def test_options_and_sizes_that_disagree(tmp_path):
    (tmp_path / "e.csv").write_text("a,b\n0,1\n1,2\n")
    np.save(tmp_path / "x.npy", np.zeros((4, 2), dtype=np.float32))
    (tmp_path / "y.txt").write_text("0\n1\n")
    with pytest.raises(UsageError, match=r"--columns: .* has no column 'c' \(columns: a, b\)"):
        from_edgelist(tmp_path / "e.csv", tmp_path / "ds", columns=("a", "c"))
    with pytest.raises(UsageError, match=r"--columns: column 5 is out of range"):
        from_edgelist(tmp_path / "e.csv", tmp_path / "ds", columns=(0, 5))
    with pytest.raises(ConvertError, match=r"x\.npy has 4 rows but the graph has 3 nodes; .*pass --num-nodes"):
        from_edgelist(tmp_path / "e.csv", tmp_path / "ds", features=tmp_path / "x.npy")
    with pytest.raises(ConvertError, match=r"y\.txt has 2 rows but the graph has 4 nodes"):
        from_edgelist(tmp_path / "e.csv", tmp_path / "ds", num_nodes=4, labels=tmp_path / "y.txt")
    with pytest.raises(ConvertError, match=r"features file .*missing\.npy does not exist"):
        from_edgelist(tmp_path / "e.csv", tmp_path / "ds", features=tmp_path / "missing.npy")
    with pytest.raises(ConvertError, match=r"edge list .*nope\.csv does not exist"):
        from_edgelist(tmp_path / "nope.csv", tmp_path / "ds")
    assert not (tmp_path / "ds").exists()


def test_a_failure_mid_write_leaves_no_partial_dataset_and_keeps_the_old_one(tmp_path):
    """Text features are streamed into the dataset after the graph is written: a bad row near the
    end fails the conversion half-way, and the writer's temporary directory goes with it."""
    n = 3000
    (tmp_path / "e.csv").write_text("".join(f"{i},{(i + 1) % n}\n" for i in range(n)))
    rows = [f"{i},{i + 0.5}" for i in range(n)]
    (tmp_path / "x.csv").write_text("\n".join(rows) + "\n")
    old = from_edgelist(tmp_path / "e.csv", tmp_path / "ds", features=tmp_path / "x.csv")
    rows[2990] = "2990,oops"
    (tmp_path / "x.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(ConvertError, match=r"x\.csv:2991: field 1 is 'oops', not a number"):
        from_edgelist(tmp_path / "e.csv", tmp_path / "ds", features=tmp_path / "x.csv", overwrite=True)
    with pytest.raises(ConvertError, match=r"x\.csv has 2,999 rows but the graph has 3,000 nodes"):
        (tmp_path / "x.csv").write_text("\n".join(rows[:2990] + rows[2991:]) + "\n")
        from_edgelist(tmp_path / "e.csv", tmp_path / "new", features=tmp_path / "x.csv")
    with pytest.raises(ConvertError, match=r"x\.csv has more rows than the graph has nodes \(3,000\)"):
        (tmp_path / "x.csv").write_text("\n".join(rows[:2990] + ["1,2"] * 11) + "\n")
        from_edgelist(tmp_path / "e.csv", tmp_path / "new", features=tmp_path / "x.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "e.csv", "x.csv"]  # no .partial directories
    kept = GraphDataset.open(tmp_path / "ds", verify=True)
    assert kept.meta == old.meta


def test_labels_with_a_header_over_integers(tmp_path):
    (tmp_path / "e.csv").write_text("0,1\n")
    (tmp_path / "y.csv").write_text("class\n3\n1\n")
    with pytest.warns(ConvertWarning, match="no node features"):
        ds = GraphDataset.open(from_edgelist(tmp_path / "e.csv", tmp_path / "ds", labels=tmp_path / "y.csv").path)
    assert ds.labels.tolist() == [3, 1] and ds.meta.num_classes == 4
