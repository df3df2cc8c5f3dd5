"""The dataset format: what is written is what is read, and damaged datasets are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.errors import ConvertError, DatasetError
from remotegnn.store import DatasetWriter, EdgePolicy, GraphDataset
from tests.remotegnn.conftest import GOLDEN_EDGES, write_dataset


def test_round_trip_of_every_array(golden):
    meta = golden.meta
    assert (meta.num_nodes, meta.num_edges, meta.feature_dim, meta.index_dtype) == (14, 10, 4, "int32")
    np.testing.assert_array_equal(golden.edge_index(), GOLDEN_EDGES)
    indptr, indices, eid = golden.csc
    assert indptr.tolist() == [0, 1, 2, 4, 6, 6, 6, 6, 10, 10, 10, 10, 10, 10, 10]
    # Incoming neighbours per target, in original edge order within a target.
    assert indices[indptr[7] : indptr[8]].tolist() == [10, 11, 12, 13]
    assert golden.degree.tolist() == np.diff(indptr).tolist()
    out_ptr, out_idx, out_eid = golden.csr
    np.testing.assert_array_equal(GOLDEN_EDGES[1, out_eid], out_idx)
    assert golden.features[5].tolist() == [5.0, 5.25, 5.5, 5.75]
    assert golden.labels.tolist() == [-1] * 14 and golden.meta.num_classes == 0


def test_splits_and_labels(tmp_path):
    ds = write_dataset(
        tmp_path / "d", [1, 2], [0, 0], 4, labels=[0, 2, 1, -1], train=np.array([True, False, True, False])
    )
    assert ds.split("train").tolist() == [0, 2]
    assert ds.meta.num_classes == 3
    with pytest.raises(DatasetError, match="no 'val' split"):
        ds.split("val")


def test_verify_accepts_an_intact_dataset(golden):
    GraphDataset.open(golden.path, verify=True)


def test_a_flipped_byte_fails_verification(golden):
    path = golden.path / "csc" / "indices.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    GraphDataset.open(golden.path)  # sizes still agree: opening is cheap and does not hash
    with pytest.raises(DatasetError, match="csc/indices.npy: checksum mismatch"):
        GraphDataset.open(golden.path, verify=True)


def test_a_truncated_file_is_refused(golden):
    path = golden.path / "features.npy"
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(DatasetError, match="features.npy has .* bytes but meta.json says"):
        GraphDataset.open(golden.path)


def test_a_missing_file_is_refused(golden):
    (golden.path / "labels.npy").unlink()
    with pytest.raises(DatasetError, match="labels.npy is missing"):
        GraphDataset.open(golden.path)


def test_meta_that_disagrees_with_the_sizes_is_refused(golden):
    meta = json.loads((golden.path / "meta.json").read_text())
    meta["num_nodes"] = 15
    (golden.path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetError, match="disagrees with the dataset's sizes"):
        GraphDataset.open(golden.path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.update(version=2), "version"),
        (lambda m: m["files"].pop("degree"), "missing entries degree"),
        (lambda m: m.update(kind="something"), "kind"),
    ],
)
def test_invalid_meta_is_refused(golden, edit, message):
    meta = json.loads((golden.path / "meta.json").read_text())
    edit(meta)
    (golden.path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetError, match=message):
        GraphDataset.open(golden.path)


def test_not_a_dataset(tmp_path):
    with pytest.raises(DatasetError, match="not a dataset directory"):
        GraphDataset.open(tmp_path / "nothing")
    with pytest.raises(DatasetError, match="meta.json cannot be read"):
        GraphDataset.open(tmp_path)


def test_failure_while_writing_leaves_nothing(tmp_path):
    with pytest.raises(UsageError), DatasetWriter(tmp_path / "d", name="d") as writer:
        writer.write_graph(np.array([1]), np.array([0]), 2)
        writer.write_labels(np.array([0, 1, 2]))  # wrong length
    assert list(tmp_path.iterdir()) == []


def test_existing_destination_needs_overwrite(golden):
    with pytest.raises(UsageError, match="--overwrite"):
        DatasetWriter(golden.path, name="again")
    write_dataset_again = DatasetWriter(golden.path, name="again", overwrite=True)
    with write_dataset_again as writer:
        writer.write_graph(np.array([1]), np.array([0]), 2)
        writer.features(3)
        writer.commit()
    assert GraphDataset.open(golden.path).meta.num_nodes == 2
    assert sorted(p.name for p in golden.path.parent.iterdir()) == ["golden"]


class TestEdgePolicy:
    SRC = np.array([0, 1, 1, 2, 2, 3])
    DST = np.array([1, 2, 2, 2, 0, 1])  # (1,2) twice, (2,2) a self loop

    def write(self, tmp_path, policy):
        return write_dataset(tmp_path / "p", self.SRC, self.DST, 4, policy=policy)

    def test_default_drops_loops_and_duplicates(self, tmp_path):
        ds = self.write(tmp_path, EdgePolicy())
        assert ds.edge_index().T.tolist() == [[0, 1], [1, 2], [2, 0], [3, 1]]

    def test_keep(self, tmp_path):
        ds = self.write(tmp_path, EdgePolicy(self_loops="keep", duplicates="keep"))
        assert ds.meta.num_edges == 6

    def test_error_names_the_edge(self, tmp_path):
        with pytest.raises(ConvertError, match="edge 3 is a self loop on node 2"):
            self.write(tmp_path, EdgePolicy(self_loops="error"))
        with pytest.raises(ConvertError, match=r"edge \(1, 2\) appears more than once"):
            self.write(tmp_path, EdgePolicy(duplicates="error"))
        assert not (tmp_path / "p").exists()

    def test_undirected_stores_each_pair_both_ways_once(self, tmp_path):
        # (0,1) and (3,1) plus (1,2) and (2,0); (1,2) given twice is one pair.
        ds = self.write(tmp_path, EdgePolicy(undirected=True))
        pairs = sorted(map(tuple, ds.edge_index().T.tolist()))
        assert pairs == sorted([(0, 1), (1, 0), (1, 2), (2, 1), (2, 0), (0, 2), (3, 1), (1, 3)])
        assert ds.meta.undirected

    def test_ids_out_of_range(self, tmp_path):
        with pytest.raises(ConvertError, match=r"edge 1: target node id 7 is outside \[0, 4\)"):
            write_dataset(tmp_path / "p", [0, 1], [1, 7], 4)
        with pytest.raises(ConvertError, match="source node id -1"):
            write_dataset(tmp_path / "q", [-1], [1], 4)
