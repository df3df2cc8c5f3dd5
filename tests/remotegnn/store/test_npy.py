"""Block-wise .npy reading and appending: every layout an edge array comes in, archive members
compressed or not, bare arrays, holes, and truncated files named."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn.errors import ConvertError
from remotegnn.store.npy import NpyAppender, NpyReader, archive_members

EDGES = np.arange(20, dtype=np.int64).reshape(10, 2)  # (0, 1), (2, 3), ...


@pytest.mark.parametrize(
    "array",
    [EDGES, EDGES.T.copy(), np.asfortranarray(EDGES), np.asfortranarray(EDGES.T)],
    ids=["E x 2", "2 x E", "E x 2 Fortran", "2 x E Fortran"],
)
def test_pairs_in_every_layout(tmp_path, array):
    np.save(tmp_path / "e.npy", array)
    reader = NpyReader(tmp_path / "e.npy")
    assert reader.pair_count == 10
    blocks = list(reader.pairs(3))
    assert [len(s) for s, _ in blocks] == [3, 3, 3, 1]
    np.testing.assert_array_equal(np.concatenate([s for s, _ in blocks]), EDGES[:, 0])
    np.testing.assert_array_equal(np.concatenate([t for _, t in blocks]), EDGES[:, 1])


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed], ids=["stored", "compressed"])
def test_archive_members_read_in_blocks(tmp_path, save):
    features = np.random.default_rng(0).standard_normal((100, 7)).astype(np.float32)
    save(tmp_path / "a.npz", x=features, edge_index=EDGES.T)
    assert sorted(archive_members(tmp_path / "a.npz")) == ["edge_index", "x"]
    reader = NpyReader(tmp_path / "a.npz", "x")
    assert reader.shape == (100, 7) and reader.what.endswith("a.npz[x]")
    np.testing.assert_array_equal(np.concatenate(list(reader.blocks(16))), features)
    np.testing.assert_array_equal(reader.read(10, 20), features[10:20])


def test_truncated_and_bare_files(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((100, 4), np.float32))
    data = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "x.npy").write_bytes(data[:-100])
    with pytest.raises(ConvertError, match=r"x\.npy is truncated: its data ends after 1,500 of the 1,600 bytes"):
        list(NpyReader(tmp_path / "x.npy").blocks(1000))
    np.arange(12, dtype=np.float32).tofile(tmp_path / "bare.npy")
    bare = NpyReader.bare(tmp_path / "bare.npy", np.float32, (3,))
    np.testing.assert_array_equal(bare.read(0, 4), np.arange(12).reshape(4, 3))
    with pytest.raises(ConvertError, match="not whole rows"):
        NpyReader.bare(tmp_path / "bare.npy", np.float32, (5,))
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object))
    with pytest.raises(ConvertError, match="only numeric arrays are read"):
        NpyReader(tmp_path / "o.npy")


def test_appender_sets_the_length_at_close_and_skipped_rows_read_as_zeros(tmp_path):
    with NpyAppender(tmp_path / "f.npy", np.float16, (3,)) as out:
        out.append(np.ones((2, 3)))
        out.skip(4)
        out.append(np.full((1, 3), 2.0))
        out.skip(5)  # a trailing run of zeros too
    loaded = np.load(tmp_path / "f.npy")
    assert loaded.dtype == np.float16 and loaded.shape == (12, 3)
    assert loaded[:2].tolist() == [[1, 1, 1]] * 2 and loaded[6].tolist() == [2, 2, 2]
    assert not loaded[2:6].any() and not loaded[7:].any()
