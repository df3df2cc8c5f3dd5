"""Where batches are sampled, in the pipeline model, against figures computed by hand on the small
graph of ``test_learner_cache`` (1,000,000 rows of 1,024 B, 20,000,000 edges, batches of 10,000
nodes and 10,000 edges, 100 per epoch; the learner has 8 vCPUs and one GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import Unrunnable
from contracts.wirebytes import REQUEST_ID_BYTES, batch_overhead_bytes
from contracts.workload import Workload
from foundation.units import GIB
from planner.catalog.snapshot import InstanceColumns
from planner.costmodel import pipeline
from planner.costmodel.batch import learner_csc_bytes
from planner.costmodel.evaluation import FEASIBLE, Clusters, ModelInputs
from tests.planner.costmodel.test_learner_cache import (
    DIM,
    FEATURES,
    IDS_PER_EPOCH,
    LINK_BYTES_S,
    PROFILE,
    QUARTER_GIB,
    READS,
    H,
    _gp3,
    evaluate,
    machine,
)

CO = DEFAULT_COEFFICIENTS
CSC = (1_000_000 + 1) * 8 + 20_000_000 * 4  # int64 pointers, an int32 position per edge
SAMPLED_EDGES = 100 * 10_000  # per epoch
LEARNER_CORES = 8 - 1  # one core feeds the GPU


def test_the_learners_csc_is_half_the_structure_a_memory_machine_keeps():
    assert learner_csc_bytes(PROFILE) == CSC


def test_a_sampling_learner_is_sent_no_structure_only_the_rows_it_asks_for_by_id():
    ev, d = evaluate(learner_gib=64, learner_cache=QUARTER_GIB, sampling="learner")
    missing = READS * (1 - H(0.25))  # rows the learner's cache lacks
    requests = missing * REQUEST_ID_BYTES + 100 * batch_overhead_bytes(1, learner_samples=True)  # 100 batches
    assert d["learner_samples"] == 1.0
    assert d["epoch_wire_id_gb"] * 1e9 == pytest.approx(requests)
    assert d["epoch_wire_feature_gb"] * 1e9 == pytest.approx(missing * DIM * 4)
    assert d["epoch_wire_gb"] * 1e9 == pytest.approx(requests + missing * DIM * 4)
    assert ev.stages["network"][0] == pytest.approx((requests + missing * DIM * 4) / LINK_BYTES_S)
    _, memory = evaluate(learner_gib=64, learner_cache=QUARTER_GIB, sampling="memory")
    assert memory["learner_samples"] == 0.0 and memory["epoch_wire_id_gb"] * 1e9 == pytest.approx(IDS_PER_EPOCH)


def test_the_csc_comes_out_of_the_learners_cache():
    _, memory = evaluate(learner_gib=12.5, memory_share=1.0, learner_cache="auto", sampling="memory")
    _, learner = evaluate(learner_gib=12.5, memory_share=1.0, learner_cache="auto", sampling="learner")
    assert (memory["learner_free_gib"] - learner["learner_free_gib"]) * GIB == pytest.approx(CSC)
    assert learner["learner_csc_gib"] * GIB == pytest.approx(CSC) and memory["learner_csc_gib"] == 0.0
    # ~0.46 GiB free before the CSC: auto takes all of it either way, so the learner holds fewer rows.
    assert learner["learner_cache_gib"] == pytest.approx(learner["learner_free_gib"])
    assert (memory["learner_cache_fraction"] - learner["learner_cache_fraction"]) * FEATURES == pytest.approx(CSC)


def test_sampling_moves_from_the_memory_machine_to_the_learners_cores():
    memory, _ = evaluate(learner_gib=64, learner_cache="none", sampling="memory")
    learner, d = evaluate(learner_gib=64, learner_cache="none", sampling="learner")
    sampling_s = SAMPLED_EDGES / CO.sample_edges_per_core_s
    gather_s = READS * DIM * 4 / (CO.gather_gbps_per_core * 1e9) / 8  # every row sent, on 8 vCPUs
    assert memory.stages["cpu"][0] == pytest.approx(gather_s + sampling_s / 8)
    assert d["learner_sampling_s"] == pytest.approx(sampling_s / LEARNER_CORES)
    assert learner.stages["cpu"][0] == pytest.approx(max(gather_s, sampling_s / LEARNER_CORES))


def test_a_learner_whose_free_ram_cannot_hold_the_csc_cannot_sample():
    # 50 MiB above the reserves: the batches in flight (~41 MB) leave less than the 88 MB CSC.
    small = CO.os_reserve_gib + CO.learner_reserve_gib + 50 / 1024
    asked, _ = evaluate(learner_gib=small, learner_cache="none", sampling="learner")
    assert asked.infeasible[0] == Unrunnable.CSC_EXCEEDS_LEARNER_RAM
    assert "CSC" in Unrunnable.CSC_EXCEEDS_LEARNER_RAM.description
    auto, d = evaluate(learner_gib=small, learner_cache="none", sampling="auto")
    assert auto.infeasible[0] == FEASIBLE and d["learner_samples"] == 0.0  # the memory machine samples


def test_a_learner_cache_that_fits_only_beside_no_csc_keeps_its_own_reason():
    # Room for a 0.1 GiB cache, but not beside the CSC: learner sampling cannot run, memory sampling can.
    room = CO.os_reserve_gib + CO.learner_reserve_gib + 0.15
    auto, d = evaluate(learner_gib=room, learner_cache=0.1, sampling="auto")
    assert auto.infeasible[0] == FEASIBLE and d["learner_samples"] == 0.0
    learner, _ = evaluate(learner_gib=room, learner_cache=0.1, sampling="learner")
    assert learner.infeasible[0] == Unrunnable.LEARNER_CACHE_EXCEEDS_RAM


@pytest.mark.parametrize(
    ("learner_gib", "coefficients", "chosen"),
    [
        (64, DEFAULT_COEFFICIENTS, 1.0),  # link-bound: 4 B requests beat a compact frame's 6.1 B a node
        (64, DEFAULT_COEFFICIENTS.model_copy(update={"gpu_step_overhead_s": 10.0}), 0.0),  # GPU-bound: a tie
    ],
)
def test_auto_keeps_the_faster_mode_and_ties_keep_the_memory_machines_sampling(learner_gib, coefficients, chosen):
    kw = {"learner_gib": learner_gib, "memory_share": 1.0, "coefficients": coefficients, "learner_cache": "none"}
    memory, _ = evaluate(sampling="memory", **kw)
    learner, _ = evaluate(sampling="learner", **kw)
    auto, d = evaluate(sampling="auto", **kw)
    assert d["learner_samples"] == chosen
    assert auto.total_hours[0] == pytest.approx(min(memory.total_hours[0], learner.total_hours[0]))
    assert auto.total_usd[0] == pytest.approx(min(memory.total_usd[0], learner.total_usd[0]))


def test_a_single_machine_samples_as_it_always_has():
    columns = InstanceColumns.from_instances([machine("lrn.x", 64, gpu=True)])
    clusters = Clusters(
        learner=np.array([0]),
        memory=np.array([-1]),
        count=np.array([0]),
        volume_mbps=np.array([1000.0]),
        volume_iops=np.array([16000.0]),
    )

    def priced(sampling: str):
        workload = Workload(fanouts=[10], batch_size=1000, sampling=sampling)
        inputs = ModelInputs(columns=columns, volume=_gp3(), profile=PROFILE, workload=workload, coefficients=CO)
        return pipeline.evaluate(inputs, clusters)

    memory = priced("memory")
    for sampling in ("learner", "auto"):
        ev = priced(sampling)
        assert ev.stages == pytest.approx(memory.stages) and ev.startup_s[0] == memory.startup_s[0]
        assert ev.infeasible[0] == FEASIBLE and ev.detail_at(0)["learner_samples"] == 0.0
        assert ev.detail_at(0)["epoch_wire_gb"] == 0.0
