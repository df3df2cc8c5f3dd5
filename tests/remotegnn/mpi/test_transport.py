"""Batches over MPI are the batches of the local transport; memory ranks shard rows; learner
ranks split the seeds. Each test reads a real `remotegnn launch` job (mpiexec, 2-3 ranks); the
tests of one job shape (one memory rank, or two, with one learner) share one job that runs their
scenarios one after another, each with loaders of its own."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.remotegnn.mpi.conftest import Scenarios, run_learners, run_scenarios

# One worker runs this module's tests, so each shared job runs once.
pytestmark = [pytest.mark.usefixtures("mpi"), pytest.mark.slow, pytest.mark.xdist_group("remotegnn-mpi-transport")]


# A learner cache of about 30% of the rows, a memory cache beside it, half-precision rows.
CACHED = {"learner_cache": 4096 * 16 * 2 * 3 // 10, "cache_bytes": 20_000, "wire_dtype": "float16"}


@pytest.fixture(scope="module")
def one_memory_rank(mpi, rmat, hetero_dataset, tmp_path_factory) -> Scenarios:
    """One job: one memory rank, one learner."""
    scenarios = {
        "compare-default": ("compare", rmat.path, {}),
        "compare-caches-float16": ("compare", rmat.path, CACHED),
        "link": ("link", rmat.path, {}),
        "hetero": ("hetero", hetero_dataset, {}),
        "early": ("early", rmat.path, {}),  # last: it leaves its loader open
    }
    return run_scenarios(scenarios, tmp_path_factory.mktemp("one-memory-rank"), memory=1)


@pytest.fixture(scope="module")
def two_memory_ranks(mpi, rmat, rmat_reordered, hetero_dataset, tmp_path_factory) -> Scenarios:
    """One job: two memory ranks (the rows sharded over them), one learner."""
    scenarios = {
        "compare-default": ("compare", rmat.path, {}),
        "compare-caches-float16": ("compare", rmat.path, CACHED),
        "both-tiers": ("compare", rmat.path, {**CACHED, "device_cache": 4096 * 16 * 2 // 10}),
        "reordered": ("compare", rmat_reordered.path, {**CACHED, "reference": str(rmat.path)}),
        "link": ("link", rmat.path, {}),
        "hetero": ("hetero", hetero_dataset, {}),
        "resume-link": ("resume-link", rmat.path, {}),
        "resume-hetero": ("resume-hetero", hetero_dataset, {}),
    }
    return run_scenarios(scenarios, tmp_path_factory.mktemp("two-memory-ranks"), memory=2)


def job(request, memory: int) -> Scenarios:
    return request.getfixturevalue("one_memory_rank" if memory == 1 else "two_memory_ranks")


@pytest.mark.parametrize("options", [{}, CACHED], ids=["default", "caches-float16"])
@pytest.mark.parametrize("memory", [1, 2])
def test_mpi_batches_equal_local_batches(request, memory, options):
    ran = job(request, memory)
    (result,) = ran.results["compare-caches-float16" if options else "compare-default"]
    assert result["batches"] == 2 * 7  # 410 train seeds / 64, two epochs
    assert result["mismatches"] == []
    stats = result["stats"]
    assert stats["batches"] == 7 and stats["epoch"] == 1
    assert stats["batch_creators"]["processes"] == memory
    assert stats["vector_loaders"]["batches"] == 7 * memory  # every rank sends its rows of every batch
    # Every row of the last epoch came from the learner's cache or was sent, never both.
    assert stats["rows_from_learner_cache"] + stats["rows_sent"] == result["rows"]
    assert stats["rows_sent"] == stats["cache_hits"] + stats["cache_misses"]
    learner_rows = result["caches"][0]["learner_rows"]
    assert all(c["learner_rows"] == learner_rows for c in result["caches"])  # every rank skips the same rows
    if options:
        assert learner_rows == 4096 * 3 // 10
        assert 0.3 < stats["learner_hit_rate"] < 1  # the hottest 30% of rows serve more than 30% of reads
        assert stats["bytes_sent"] < result["local_stats"]["bytes_sent"]
        assert all(c["memory_rows"] > 0 and c["wire_dtype"] == "float16" for c in result["caches"])
    assert ran.segments_left == set()  # every rank's shared memory went with the job


@pytest.mark.parametrize("layout", ["range", "modulo"])
def test_batches_are_the_same_whichever_layout_deals_the_rows(rmat, tmp_path, layout):
    """The default (striped) runs in every other test; the other two layouts give the same batches,
    with the learner's cache and each rank's own cache filled from each rank's own rows."""
    (result,) = run_learners("compare", rmat.path, tmp_path, memory=2, options=CACHED, launch_args=("--layout", layout))
    assert result["batches"] == 2 * 7 and result["mismatches"] == []
    stats = result["stats"]
    assert stats["rows_from_learner_cache"] + stats["rows_sent"] == result["rows"]
    assert all(c["memory_rows"] > 0 for c in result["caches"])


def test_both_learner_tiers_over_mpi_leave_batches_equal(two_memory_ranks):
    """A device tier (10% of the rows, on a CPU device here) above the RAM tier: each memory rank
    sends its share of both, the learner checks both, and every row comes from exactly one place."""
    (result,) = two_memory_ranks.results["both-tiers"]
    assert result["batches"] == 2 * 7 and result["mismatches"] == []
    stats = result["stats"]
    from_tiers = stats["rows_from_device_cache"] + stats["rows_from_learner_cache"]
    assert from_tiers + stats["rows_sent"] == result["rows"]
    assert all((c["device_rows"], c["learner_rows"]) == (409, 4096 * 3 // 10) for c in result["caches"])
    assert stats["device_cache_hit_rate"] > stats["learner_hit_rate"] > 0  # the hottest rows are on the device


def test_memory_ranks_say_how_long_choosing_caches_and_filling_the_learner_cache_took(two_memory_ranks):
    """Start-up is most of a short job on a large graph: each memory rank logs, per session, the
    seconds its caches took to choose and the rows of the learner cache it read and sent, and when."""
    chosen = re.findall(
        r"memory rank (\d): (learner \d+ session \d+): caches chosen in [\d.]+s(?:; reading and sending ([\d,]+))?",
        two_memory_ranks.log,
    )
    sent = re.findall(
        r"memory rank (\d): (learner \d+ session \d+): ([\d,]+) learner cache rows read and sent in [\d.]+s",
        two_memory_ranks.log,
    )
    sessions = {(rank, session) for rank, session, _ in chosen}
    assert len(sessions) == len(chosen) >= 2 * len(two_memory_ranks.results)  # once per rank and session
    assert {rank for rank, _ in sessions} == {"0", "1"}
    announced = {(rank, session): int(rows.replace(",", "")) for rank, session, rows in chosen if rows}
    assert {(rank, session): int(rows.replace(",", "")) for rank, session, rows in sent} == announced
    totals = {session: sum(rows for (_, s), rows in announced.items() if s == session) for _, session in announced}
    assert 409 + 4096 * 3 // 10 in totals.values()  # both tiers of the both-tiers scenario, from the two ranks


def test_batches_striped_over_several_tcp_flows_equal_local_batches(rmat, tmp_path):
    """--flows 3 (Open MPI's btl_tcp_links) with TCP as the only transport between ranks, as
    between machines: every batch arrives whole and equal."""
    tcp_only = ("--flows", "3", "--mpi-arg=--mca btl tcp,self")
    (result,) = run_learners("compare", rmat.path, tmp_path, memory=2, launch_args=tcp_only)
    assert result["batches"] == 2 * 7 and result["mismatches"] == []


def test_a_reordered_dataset_over_mpi_gives_the_original_batches(two_memory_ranks):
    (result,) = two_memory_ranks.results["reordered"]
    assert result["batches"] == 2 * 7
    assert result["mismatches"] == []
    assert result["stats"]["rows_from_learner_cache"] > 0  # the learner cache, keyed by stored rows, was used


@pytest.mark.parametrize("memory", [1, 2])
def test_mpi_link_batches_equal_local_link_batches(request, memory):
    (result,) = job(request, memory).results["link"]
    assert result["batches"] == 2 * 8  # 500 edges / 64, two epochs
    assert result["mismatches"] == []


@pytest.mark.parametrize("memory", [1, 2])
def test_mpi_heterogeneous_batches_equal_local_ones(request, memory):
    (result,) = job(request, memory).results["hetero"]
    assert result["batches"] == 4  # 60 papers / 16
    assert result["mismatches"] == []


def test_learner_ranks_get_equal_disjoint_seed_slices(rmat, tmp_path):
    """Every training seed once an epoch, equal shares (an odd count is padded with one seed taken
    twice, as PyTorch's DistributedSampler pads) and so the same number of batches on each rank."""
    results = run_learners("seeds", rmat.path, tmp_path, learners=2)
    train = np.sort(np.asarray(rmat.split("train")))
    padding = -len(train) % 2
    for epoch in range(2):
        slices = [np.asarray(r["epochs"][epoch]) for r in results]
        assert len(slices[0]) == len(slices[1]) == (len(train) + padding) // 2
        assert np.intersect1d(*slices).size == padding
        assert np.array_equal(np.unique(np.concatenate(slices)), train)
    assert results[0]["epochs"][0] != results[0]["epochs"][1]  # reshuffled: a new slice each epoch
    assert results[0]["len"] == results[1]["len"] >= len(train) // 2 // 64


def test_abandoned_epoch_then_a_whole_one(rmat, one_memory_rank):
    (result,) = one_memory_rank.results["early"]
    assert len(result["first"]) == 64
    assert sorted(result["epoch1"]) == sorted(int(v) for v in rmat.split("train"))
    assert result["stats_epoch"] == 1  # the stats belong to the epoch read, not the abandoned one


def test_a_loader_restored_from_its_state_finishes_the_epoch_as_an_uninterrupted_one(rmat, tmp_path):
    """Over MPI with the rows sharded over two memory ranks: each of two learners stops two batches
    into epoch 1, and a fresh loader given its state yields the rest, equal to epoch 1 read whole;
    together their resumed epochs still hold every training seed (once, but the padding)."""
    results = run_learners("resume", rmat.path, tmp_path, memory=2, learners=2)
    for result in results:
        assert_resumed(result, learners=2)
    seeds = sorted({int(v) for r in results for batch in r["got"] for v in batch[1]})
    assert seeds == sorted(int(v) for v in rmat.split("train"))


@pytest.mark.parametrize("kind", ["link", "hetero"])
def test_a_link_or_heterogeneous_loader_restored_from_its_state_finishes_the_epoch(two_memory_ranks, kind):
    """The same, for one learner's link loader (with negatives) and heterogeneous loader."""
    (result,) = two_memory_ranks.results[f"resume-{kind}"]
    assert_resumed(result, learners=1)


def assert_resumed(result: dict, learners: int) -> None:
    assert len(result["expected"]) > 2 and result["got"] == result["expected"]
    assert (result["state"]["epoch"], result["state"]["batches_yielded"]) == (1, 2)
    assert result["state"]["learner"] == result["learner"] and result["state"]["learners"] == learners
