"""The learner's device cache on a CPU device (a separate tensor stands in for device memory):
batches bit-identical to the uncached loader's, the copies it saves counted exactly, and its
argument checked at the boundary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from foundation.errors import UsageError
from remotegnn.learner.device_cache import DeviceCache, device_cache_bytes
from remotegnn.link_loader import DistributedLinkLoader
from remotegnn.loader import DistributedGraphLoader
from remotegnn.server import ServerOptions
from remotegnn.store import GraphDataset
from tests.remotegnn.test_hetero import CITES, WRITES, WRITTEN_BY
from tests.remotegnn.test_hetero import batches as hetero_batches
from tests.remotegnn.test_hetero import graph as hetero_graph

FAST = dict(server=ServerOptions(batch_creators=1, vector_loaders=1), timeout=20)
FIELDS = ("n_id", "edge_index", "e_id", "input_id", "x", "y")


def _epoch(path, **options):
    with DistributedGraphLoader(
        path,
        [5, 5],
        input_nodes="train",
        batch_size=64,
        shuffle=True,
        zero_copy=False,
        seed=4,
        **(FAST | options),
        edge_ids=True,
    ) as loader:
        return list(loader), loader.last_stats, loader.caches[0]


def _share_of_rows(dataset: GraphDataset, share: float, itemsize: int = 4) -> int:
    return int(share * dataset.meta.num_nodes) * dataset.meta.feature_dim * itemsize


@pytest.mark.parametrize("wire_dtype", ["float32", "bfloat16"])
def test_a_device_cache_of_30_percent_leaves_x_bit_identical_and_copies_only_misses(rmat, wire_dtype):
    itemsize = 4 if wire_dtype == "float32" else 2
    plain, plain_stats, _ = _epoch(rmat.path, wire_dtype=wire_dtype)
    cached, stats, caches = _epoch(rmat.path, wire_dtype=wire_dtype, device_cache=_share_of_rows(rmat, 0.3, itemsize))
    assert caches.device_rows == int(0.3 * rmat.meta.num_nodes)
    for a, b in zip(plain, cached, strict=True):
        for field in FIELDS:
            assert torch.equal(a[field], b[field]), field
    rows = sum(len(batch.n_id) for batch in cached)
    assert stats.rows_from_device_cache + stats.rows_sent == rows == plain_stats.rows_sent
    assert stats.device_cache_hit_rate == pytest.approx(stats.rows_from_device_cache / rows)
    assert stats.device_cache_hit_rate > 0.3  # the hottest 30% of rows serve more than 30% of reads
    assert plain_stats.host_to_device_bytes == rows * rmat.meta.feature_dim * itemsize
    fell = 1 - stats.host_to_device_bytes / plain_stats.host_to_device_bytes
    assert fell == pytest.approx(stats.device_cache_hit_rate, abs=0.02)
    assert stats.bytes_sent < plain_stats.bytes_sent  # rows the device holds are not sent either
    assert plain_stats.copy_hidden_share is None and stats.copy_s > 0  # CUDA events measure the overlap


def test_device_and_ram_tiers_split_the_ranking_without_overlap(rmat):
    row = rmat.meta.row_bytes
    plain, _, _ = _epoch(rmat.path)
    both, stats, caches = _epoch(rmat.path, device_cache=300 * row, learner_cache=500 * row)
    only_ram, ram_stats, _ = _epoch(rmat.path, learner_cache=800 * row)
    assert (caches.device_rows, caches.learner_rows) == (300, 500)
    for a, b in zip(plain, both, strict=True):
        assert torch.equal(a.x, b.x)
    rows = sum(len(batch.n_id) for batch in both)
    assert stats.rows_from_device_cache + stats.rows_from_learner_cache + stats.rows_sent == rows
    # One ranking, two tiers: together they hold the 800 rows the RAM tier alone would.
    assert stats.rows_from_device_cache + stats.rows_from_learner_cache == ram_stats.rows_from_learner_cache
    assert stats.rows_from_device_cache > stats.rows_from_learner_cache  # the hottest rows are on the device


def test_link_and_heterogeneous_loaders_take_a_device_cache(rmat):
    edges = torch.from_numpy(rmat.edge_index()[:, :300])
    link = dict(edge_label_index=edges, neg_sampling_ratio=1.0, batch_size=64, seed=3, zero_copy=False, **FAST)
    with (
        DistributedLinkLoader(rmat.path, [5, 3], **link) as plain,
        DistributedLinkLoader(rmat.path, [5, 3], device_cache=_share_of_rows(rmat, 0.3), **link) as cached,
    ):
        for a, b in zip(plain, cached, strict=True):
            assert torch.equal(a.x, b.x) and torch.equal(a.edge_label_index, b.edge_label_index)
        assert cached.last_stats.rows_from_device_cache > 0
    data = hetero_graph()
    fanouts = {CITES: [3, 2], WRITES: [2, 1], WRITTEN_BY: [0, 2]}
    plain_batches = hetero_batches(data, fanouts, input_nodes="paper")
    cached_batches = hetero_batches(data, fanouts, input_nodes="paper", device_cache=40 * 6 * 4)
    for a, b in zip(plain_batches, cached_batches, strict=True):
        for node_type in ("paper", "author"):
            assert torch.equal(a[node_type].x, b[node_type].x)


@pytest.mark.parametrize(
    ("value", "named"),
    [(-1, "device_cache=-1"), ("half", "device_cache='half'"), (True, "device_cache=True"), (1 << 60, "device_cache=")],
)
def test_bad_device_cache_values_are_refused_naming_the_field(rmat, value, named):
    with pytest.raises(UsageError, match=named):
        DistributedGraphLoader(rmat.path, [2], device_cache=value, **FAST)


def test_a_dataset_without_features_refuses_a_device_cache():
    with pytest.raises(UsageError, match="device_cache=1024: the dataset has no node features"):
        device_cache_bytes(1024, torch.device("cpu"), row_bytes=0, has_features=False, largest_batch_nodes=10)


def test_auto_and_off_on_a_cpu_device(rmat):
    cpu = torch.device("cpu")
    size = dict(row_bytes=64, has_features=True, largest_batch_nodes=1000)
    assert device_cache_bytes("auto", cpu, **size) == 0  # host memory is the RAM tier's
    assert device_cache_bytes(None, cpu, **size) == device_cache_bytes(0, cpu, **size) == 0
    with DistributedGraphLoader(rmat.path, [2], batch_size=64, device_cache="auto", **FAST) as loader:
        assert loader.caches[0].device_rows == 0 and loader.options.device_cache_bytes == 0


def test_the_split_names_every_position_once():
    slot = np.full(10, -1, dtype=np.int32)
    slot[[2, 5, 7]] = [0, 1, 2]
    cache = DeviceCache(torch.zeros(3, 4), slot)
    split = cache.split(np.array([5, 1, 2, 2, 9, 7], dtype=np.int64))
    assert split.hit_pos.tolist() == [0, 2, 3, 5] and split.hit_row.tolist() == [1, 0, 0, 2]
    assert split.miss_pos.tolist() == [1, 4]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (auto reads the device's free memory)")
def test_auto_on_a_gpu_stays_within_the_free_memory_less_the_margin(rmat):
    from contracts.devicecache import DEVICE_MARGIN

    free, total = torch.cuda.mem_get_info()
    with DistributedGraphLoader(rmat.path, [5, 5], batch_size=64, device="cuda", device_cache="auto", **FAST) as loader:
        budget = loader.options.device_cache_bytes
        assert 0 < budget <= free - DEVICE_MARGIN * total
        assert loader.caches[0].device_rows == min(rmat.meta.num_nodes, budget // rmat.meta.row_bytes)
        next(iter(loader))
