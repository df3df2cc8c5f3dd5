"""fullgraph.partitioner: parts hold exactly their nodes' in-edges, halos and exchange lists."""

from __future__ import annotations

import numpy as np
import pytest

from foundation.errors import InputFileError, UsageError
from fullgraph.part import load_part
from fullgraph.partitioner import assign_parts, boundary_path, open_partition, part_dir, write_partition
from remotegnn.errors import DatasetError
from remotegnn.store import GraphDataset


def _global_edges(ds: GraphDataset) -> set[tuple[int, int]]:
    edges = ds.edge_index()
    return set(zip(edges[0].tolist(), edges[1].tolist()))


@pytest.mark.parametrize("name", ["random3", "metis2"])
def test_parts_hold_every_node_once_and_all_its_in_edges(small, partitions, name):
    meta = open_partition(partitions[name])
    owner = np.full(small.meta.num_nodes, -1)
    collected: list[tuple[int, int]] = []
    halos = []
    for p in range(meta.parts):
        part = load_part(partitions[name], p, meta)
        inner = part.global_ids[: part.inner]
        assert (owner[inner] == -1).all()
        owner[inner] = p
        src, dst = part.global_ids[part.edge_index[0].numpy()], part.global_ids[part.edge_index[1].numpy()]
        assert set(dst.tolist()) <= set(inner.tolist())
        collected += zip(src.tolist(), dst.tolist())
        halo = part.global_ids[part.inner :]
        assert set(halo.tolist()) == set(src.tolist()) - set(inner.tolist())  # exactly the remote sources
        halos.append((halo, np.repeat(np.arange(meta.parts), part.recv_counts)))
    assert (owner >= 0).all()
    assert sorted(collected) == sorted(_global_edges(small))
    for halo, claimed_owner in halos:  # each halo block comes from its owner, by owner then global id
        assert (owner[halo] == claimed_owner).all()
        assert list(zip(claimed_owner.tolist(), halo.tolist())) == sorted(zip(claimed_owner.tolist(), halo.tolist()))


@pytest.mark.parametrize("name", ["random3", "metis2"])
def test_what_a_worker_sends_is_what_its_peer_expects(partitions, name):
    meta = open_partition(partitions[name])
    parts = [load_part(partitions[name], p, meta) for p in range(meta.parts)]
    for p, sender in enumerate(parts):
        for q, receiver in enumerate(parts):
            start = sum(receiver.recv_counts[:p])
            expected = receiver.global_ids[receiver.inner + start : receiver.inner + start + receiver.recv_counts[p]]
            sent = sender.global_ids[sender.send_rows[q].numpy()]
            assert sent.tolist() == expected.tolist()


def test_quality_counts_the_cut_and_the_boundary(small, partitions):
    meta = open_partition(partitions["random3"])
    owner = assign_parts(small, 3, "random", seed=1)
    edges = small.edge_index()
    assert meta.cut_edges == int((owner[edges[0]] != owner[edges[1]]).sum())
    assert meta.boundary_rows == sum(q.halo_nodes for q in meta.quality) > 0
    sizes = [q.inner_nodes for q in meta.quality]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == small.meta.num_nodes
    assert sum(q.split_nodes["train"] for q in meta.quality) == len(small.split("train"))
    whole = open_partition(partitions["whole"])
    assert whole.cut_edges == 0 and whole.boundary_rows == 0


def test_metis_cuts_fewer_edges_than_a_random_deal(partitions, small, tmp_path):
    random2 = write_partition(small, tmp_path / "r2", 2, "random", seed=1)
    assert open_partition(partitions["metis2"]).cut_edges < random2.cut_edges


def test_a_part_is_a_dataset_that_holds_only_its_own_feature_rows(small, partitions):
    part = GraphDataset.open(part_dir(partitions["random3"], 0), verify=True)
    loaded = load_part(partitions["random3"], 0)
    inner = loaded.global_ids[: loaded.inner]
    np.testing.assert_array_equal(part.features[: loaded.inner], small.features[inner])
    assert not np.asarray(part.features[loaded.inner :]).any()  # halo rows arrive by exchange
    assert (np.asarray(part.labels[loaded.inner :]) == -1).all()


def test_an_existing_destination_is_kept_unless_overwrite(small, tmp_path):
    dst = tmp_path / "p"
    write_partition(small, dst, 2)
    before = (dst / "partition.json").read_bytes()
    with pytest.raises(UsageError, match="--overwrite"):
        write_partition(small, dst, 3)
    assert (dst / "partition.json").read_bytes() == before
    assert write_partition(small, dst, 3, overwrite=True).parts == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp directory left


@pytest.mark.parametrize("parts", [0, 601, 1000])
def test_impossible_part_counts_are_usage_errors(small, tmp_path, parts):
    with pytest.raises(UsageError, match="--parts"):
        write_partition(small, tmp_path / "p", parts)
    assert not (tmp_path / "p").exists()


def test_a_changed_boundary_file_is_refused(small, tmp_path):
    dst = tmp_path / "p"
    write_partition(small, dst, 2)
    path = boundary_path(dst, 1)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match="partition the dataset again"):
        load_part(dst, 1)


def test_a_directory_without_partition_json_is_named(tmp_path):
    with pytest.raises(DatasetError, match="fullgraph partition"):
        open_partition(tmp_path)
    (tmp_path / "partition.json").write_text("{}")
    with pytest.raises(InputFileError, match="partition file"):
        open_partition(tmp_path)
