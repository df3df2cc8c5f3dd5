"""DistributedGraphLoader honours NeighborLoader's contract (PyG's own loader cannot sample here:
no pyg-lib / torch-sparse, machine-notes), checked against the sampler and PyG's utilities."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph

from foundation.errors import UsageError
from remotegnn.loader import LEARNER_RESERVE_BYTES, DistributedGraphLoader, available_ram_bytes, learner_cache_bytes
from remotegnn.sampling import NeighborSampler
from remotegnn.server import ServerOptions
from tests.remotegnn.conftest import GOLDEN_EDGES

FAST = dict(server=ServerOptions(batch_creators=1, vector_loaders=1), timeout=20)


def golden_data() -> Data:
    edge_index = torch.from_numpy(GOLDEN_EDGES)
    return Data(
        x=torch.arange(14, dtype=torch.float32).view(-1, 1).repeat(1, 3),
        edge_index=edge_index,
        y=torch.arange(14) % 3,
        train_mask=torch.arange(14) % 2 == 0,
        edge_attr=torch.arange(10.0),
    )


def test_pyg_golden_case():
    with DistributedGraphLoader(golden_data(), [1, 2, 4], batch_size=2, **FAST) as loader:
        batch = next(iter(loader))
        assert batch.num_sampled_nodes == [2, 2, 3, 4]
        assert batch.num_sampled_edges == [2, 4, 4]
        assert batch.batch_size == 2 and batch.n_id[:2].tolist() == [0, 1]


def test_defaults_and_len_match_neighbor_loader():
    with DistributedGraphLoader(golden_data(), [2], **FAST) as loader:  # batch_size=1, shuffle=False
        assert len(loader) == 14
        assert [b.input_id.tolist() for b in loader] == [[i] for i in range(14)]
    with DistributedGraphLoader(golden_data(), [2], batch_size=4, drop_last=True, num_workers=4, **FAST) as loader:
        assert len(loader) == 3 == sum(1 for _ in loader)


def test_batches_carry_the_contract_fields(rmat):
    train = torch.from_numpy(np.array(rmat.split("train"), dtype=np.int64))
    sampler = NeighborSampler(rmat.csc, [5, 3])
    features, labels = np.asarray(rmat.features), np.asarray(rmat.labels)
    with DistributedGraphLoader(
        rmat.path, [5, 3], input_nodes=train, batch_size=50, zero_copy=False, seed=0, **FAST, edge_ids=True
    ) as loader:
        batches = list(loader)
    assert len(batches) == len(loader) == -(-len(train) // 50)
    for b, batch in enumerate(batches):
        positions = torch.arange(b * 50, min((b + 1) * 50, len(train)))
        assert batch.input_id.tolist() == positions.tolist()  # positions in input_nodes, input order
        assert batch.n_id[: batch.batch_size].tolist() == train[positions].tolist()  # seeds first
        expected = sampler.sample(train[positions].numpy(), 0, 0, b)
        assert batch.edge_index.dtype == torch.int64 and batch.edge_index.shape[0] == 2
        assert np.array_equal(batch.edge_index.numpy(), expected.edge_index)
        assert np.array_equal(batch.e_id.numpy(), expected.e_id)
        assert isinstance(batch.num_sampled_nodes, list) and isinstance(batch.num_sampled_edges, list)
        assert isinstance(batch.batch_size, int)
        np.testing.assert_array_equal(batch.x.numpy(), features[batch.n_id.numpy()])
        np.testing.assert_array_equal(batch.y.numpy(), labels[batch.n_id.numpy()])
        assert batch.train_mask.tolist() == np.isin(batch.n_id.numpy(), train.numpy()).tolist()


def test_a_mask_reports_global_ids_and_node_and_edge_attributes_are_sliced():
    data = golden_data()
    with DistributedGraphLoader(
        data, [-1, -1], input_nodes=data.train_mask, batch_size=3, zero_copy=False, **FAST
    ) as loader:
        batches = list(loader)
    assert torch.cat([b.input_id for b in batches]).tolist() == data.train_mask.nonzero().view(-1).tolist()
    for batch in batches:
        assert torch.equal(batch.x, data.x[batch.n_id]) and torch.equal(batch.y, data.y[batch.n_id])
        assert torch.equal(batch.train_mask, data.train_mask[batch.n_id])
        assert torch.equal(batch.edge_attr, data.edge_attr[batch.e_id])


def test_all_neighbours_equal_pyg_k_hop_subgraph(rmat):
    """With fanout -1 a directional batch is the k-hop in-neighbourhood PyG's utility computes."""
    edge_index = torch.from_numpy(rmat.edge_index())
    seeds = torch.tensor([5, 77, 1000])
    with DistributedGraphLoader(rmat.path, [-1, -1], input_nodes=seeds, batch_size=3, **FAST) as loader:
        batch = next(iter(loader))
        subset, _, _, _ = k_hop_subgraph(seeds, 2, edge_index, flow="source_to_target")
        assert sorted(batch.n_id.tolist()) == subset.tolist()
        inner = batch.n_id[: sum(batch.num_sampled_nodes[:-1])]  # targets of some hop
        into_inner = torch.isin(edge_index[1], inner)
        got = {tuple(e) for e in batch.n_id[batch.edge_index].t().tolist()}
        assert got == {tuple(e) for e in edge_index[:, into_inner].t().tolist()}
        assert len(got) == batch.edge_index.shape[1]  # no edge twice


def test_transform_runs_last_and_shuffle_covers_every_seed_once(rmat):
    seen = []

    def transform(batch):
        seen.append(batch.input_id.clone())
        batch.tagged = True
        return batch

    with DistributedGraphLoader(
        rmat.path, [3], input_nodes="train", batch_size=64, shuffle=True, transform=transform, **FAST
    ) as loader:
        assert all(batch.tagged for batch in loader)
        assert loader.last_stats is not None and loader.last_stats.batches == len(loader)
    ids = torch.cat(seen)
    assert sorted(ids.tolist()) == np.asarray(rmat.split("train")).tolist()


def test_unsupported_requests_are_named():
    with pytest.raises(Exception, match="directional"):
        DistributedGraphLoader(golden_data(), [2], subgraph_type="induced")
    with pytest.raises(Exception, match="one entry per node"):
        DistributedGraphLoader(golden_data(), [2], input_nodes=torch.ones(3, dtype=torch.bool))


def _epoch(path, **options) -> tuple[list[Data], object]:
    with DistributedGraphLoader(
        path,
        [5, 5],
        input_nodes="train",
        batch_size=64,
        shuffle=True,
        zero_copy=False,
        seed=4,
        **(FAST | {"edge_ids": True} | options),
    ) as loader:
        return list(loader), loader.last_stats


def test_edge_ids_cross_only_when_asked_and_nothing_else_changes(rmat):
    asked, asked_stats = _epoch(rmat.path)
    plain, plain_stats = _epoch(rmat.path, edge_ids=False)
    edges = sum(batch.edge_index.shape[1] for batch in asked)
    assert all("e_id" not in batch for batch in plain) and all("e_id" in batch for batch in asked)
    for a, b in zip(asked, plain, strict=True):
        for field in ("n_id", "edge_index", "input_id", "x", "y", "train_mask"):
            assert torch.equal(a[field], b[field]), field
    # int32 edge ids on this graph: four bytes an edge, plus a table entry and alignment per frame
    assert 0 <= asked_stats.bytes_sent - plain_stats.bytes_sent - 4 * edges <= (80 + 2 * 64) * len(asked)


@pytest.mark.parametrize("wire_dtype", ["float32", "float16", "bfloat16"])
def test_a_learner_cache_leaves_every_batch_bit_identical(rmat, wire_dtype):
    plain, plain_stats = _epoch(rmat.path, wire_dtype=wire_dtype)
    cached, stats = _epoch(
        rmat.path,
        wire_dtype=wire_dtype,
        learner_cache=rmat.meta.row_bytes * 1200,
        server=ServerOptions(batch_creators=1, vector_loaders=1, cache_bytes=20_000),
    )
    for a, b in zip(plain, cached, strict=True):
        for field in ("n_id", "edge_index", "e_id", "input_id", "x", "y"):
            assert torch.equal(a[field], b[field]), field
    rows = sum(len(batch.n_id) for batch in cached)
    assert stats.rows_from_learner_cache + stats.rows_sent == rows == plain_stats.rows_sent
    assert stats.rows_sent == stats.rows_from_memory_cache + stats.rows_from_volume
    assert stats.learner_hit_rate == pytest.approx(stats.rows_from_learner_cache / rows)
    assert stats.learner_hit_rate > 0.3 and stats.bytes_sent < plain_stats.bytes_sent


def test_half_precision_rows_are_the_rounded_rows(rmat):
    exact, exact_stats = _epoch(rmat.path)
    half, half_stats = _epoch(rmat.path, wire_dtype="float16")
    kept, _ = _epoch(rmat.path, wire_dtype="bfloat16", keep_wire_dtype=True)
    for a, b, c in zip(exact, half, kept, strict=True):
        assert b.x.dtype == torch.float32 and torch.equal(b.x, a.x.half().float())
        assert c.x.dtype == torch.bfloat16 and torch.equal(c.x, a.x.bfloat16())
    feature_bytes = exact_stats.rows_sent * rmat.meta.row_bytes
    assert exact_stats.bytes_sent - half_stats.bytes_sent == pytest.approx(feature_bytes / 2, rel=0.05)


def test_learner_cache_and_wire_dtype_mistakes_are_named(rmat):
    with pytest.raises(UsageError, match="learner_cache=-1"):
        DistributedGraphLoader(rmat.path, [2], learner_cache=-1)
    with pytest.raises(UsageError, match="learner_cache='half'"):
        DistributedGraphLoader(rmat.path, [2], learner_cache="half")
    with pytest.raises(UsageError, match="wire_dtype: Input should be 'float32', 'float16' or 'bfloat16'"):
        DistributedGraphLoader(rmat.path, [2], wire_dtype="int8")


def test_auto_learner_cache_is_free_ram_under_launch_and_none_locally(monkeypatch):
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 0 < available_ram_bytes() <= total
    monkeypatch.setattr("remotegnn.loader.available_ram_bytes", lambda: LEARNER_RESERVE_BYTES + 12345)
    assert learner_cache_bytes("auto", mpi=True) == 12345 and learner_cache_bytes("auto", mpi=False) == 0
    monkeypatch.setattr("remotegnn.loader.available_ram_bytes", lambda: LEARNER_RESERVE_BYTES - 1)
    assert learner_cache_bytes("auto", mpi=True) == 0  # never into the training process's reserve
    assert learner_cache_bytes(None, mpi=True) == 0 and learner_cache_bytes(1234, mpi=False) == 1234


def test_disjoint_batches_carry_each_nodes_tree_as_pyg_does(rmat):
    fanouts, size = [4, 3], 16
    with DistributedGraphLoader(
        rmat.path, fanouts, input_nodes="train", batch_size=size, disjoint=True, seed=2, zero_copy=False, **FAST
    ) as loader:
        batches = list(loader)
    sampler = NeighborSampler(rmat.csc, fanouts, disjoint=True)
    train = np.asarray(rmat.split("train"))
    features = torch.from_numpy(np.array(rmat.features))
    for b, batch in enumerate(batches[:5]):
        seeds = train[b * size : (b + 1) * size]
        expected = sampler.sample(seeds, 2, 0, b)  # the keys the server draws with: (seed, epoch, batch)
        assert torch.equal(batch.batch, torch.from_numpy(expected.batch))  # rebuilt on the learner, exactly
        assert torch.equal(batch.n_id, torch.from_numpy(expected.n_id))
        assert torch.equal(batch.x, features[batch.n_id])  # repeated nodes carry their rows each time
        row, col = batch.edge_index
        assert torch.equal(batch.batch[row], batch.batch[col])
    assert any(len(torch.unique(b.n_id)) < len(b.n_id) for b in batches)


def test_weighted_sampling_follows_the_data_weight_attribute():
    # Golden graph, node 7 has in-edges from 10, 11, 12, 13: the edge from 13 weighs 0, never drawn.
    data = golden_data()
    data.edge_weight = torch.tensor([1.0, 1, 1, 1, 1, 1, 1, 1, 1, 0])
    with DistributedGraphLoader(
        data, [2], input_nodes=torch.tensor([7]), weight_attr="edge_weight", shuffle=True, **FAST
    ) as loader:
        sampled = [set(batch.n_id[1:].tolist()) for _ in range(30) for batch in loader]
    assert all(len(s) == 2 and 13 not in s for s in sampled)
    assert set().union(*sampled) == {10, 11, 12}


def test_bidirectional_batches_hold_every_sampled_edge_both_ways(rmat):
    def first_batch(subgraph_type: str) -> Data:
        with DistributedGraphLoader(
            rmat.path, [4, 3], "train", batch_size=32, subgraph_type=subgraph_type, zero_copy=False, seed=1, **FAST
        ) as loader:
            return next(iter(loader))

    directional, both = first_batch("directional"), first_batch("bidirectional")
    assert torch.equal(directional.n_id, both.n_id)
    pairs = set(map(tuple, directional.edge_index.t().tolist()))
    assert set(map(tuple, both.edge_index.t().tolist())) == pairs | {(c, r) for r, c in pairs}
    assert "num_sampled_nodes" not in both  # PyG drops the per-hop counts, which no longer hold
    edges = torch.from_numpy(rmat.edge_index())
    ends = edges[:, both.e_id]  # every edge keeps the id of the stored edge it came from, either way
    as_sampled = torch.stack([both.n_id[both.edge_index[0]], both.n_id[both.edge_index[1]]])
    assert bool(((ends == as_sampled).all(0) | (ends == as_sampled.flip(0)).all(0)).all())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the CUDA path cannot run without one)")
@pytest.mark.parametrize("device_cache", [0, 1200 * 64], ids=["no-device-cache", "device-cache"])
def test_cuda_batches_equal_cpu_batches_and_are_ready_on_the_training_stream(rmat, device_cache):
    cpu, _ = _epoch(rmat.path)
    gpu, stats = _epoch(rmat.path, device="cuda", device_cache=device_cache, wire_dtype="bfloat16")
    cpu_rounded, _ = _epoch(rmat.path, wire_dtype="bfloat16")
    assert stats.copy_s > 0 and stats.copy_hidden_share is not None and 0 <= stats.copy_hidden_share <= 1
    assert (stats.rows_from_device_cache > 0) == bool(device_cache)
    for a, b in zip(cpu_rounded, gpu, strict=True):
        assert torch.equal(a.x, b.x.cpu())  # the device tier's rows widen as the wire's do
    gpu, _ = _epoch(rmat.path, device="cuda", device_cache=device_cache)
    weight = torch.randn(rmat.meta.feature_dim, 8, device="cuda")
    for a, b in zip(cpu, gpu, strict=True):
        assert b.x.is_cuda and b.train_mask.is_cuda
        for field in ("n_id", "edge_index", "e_id", "input_id", "x", "y", "train_mask"):
            assert torch.equal(a[field], b[field].cpu()), field
        # Used at once on the default stream: the event wait orders it after the side stream's copy.
        assert torch.allclose((b.x @ weight).cpu(), a.x @ weight.cpu(), atol=1e-4)


@pytest.mark.parametrize("given", ["split", "mask", "ids", "learner-cache"])
def test_a_reordered_dataset_gives_the_original_batches_in_the_users_ids(rmat, rmat_reordered, given):
    train = np.asarray(rmat.split("train"), dtype=np.int64)
    mask = torch.zeros(rmat.meta.num_nodes, dtype=torch.bool)
    mask[torch.from_numpy(train)] = True
    input_nodes = {"mask": mask, "ids": torch.from_numpy(train[::-1].copy())}.get(given, "train")
    cache = {"learner_cache": rmat.meta.row_bytes * 1200} if given == "learner-cache" else {}
    epochs = []
    for dataset in (rmat, rmat_reordered):
        with DistributedGraphLoader(
            dataset.path,
            [5, 3],
            input_nodes=input_nodes,
            batch_size=64,
            shuffle=True,
            seed=11,
            zero_copy=False,
            **cache,
            **FAST,
            edge_ids=True,
        ) as loader:
            epochs.append(list(loader))
    original, reordered = epochs
    assert len(original) == len(reordered) == 7
    for mine, theirs in zip(original, reordered, strict=True):
        for field in ("n_id", "e_id", "edge_index", "input_id", "x", "y", "train_mask"):
            assert torch.equal(theirs[field], mine[field]), field
        assert theirs.num_sampled_nodes == mine.num_sampled_nodes
