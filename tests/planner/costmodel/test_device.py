"""The learner's GPUs: the device feature cache, the copy overlapped with the step, device memory."""

from __future__ import annotations

import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS as CO
from contracts.plan import Unrunnable
from contracts.workload import Workload
from planner.costmodel.batch import estimate_batch
from planner.costmodel.gpu import step_work
from planner.datasets.builtin import builtin_profile
from planner.solver.estimate import Estimate, EstimateRequest, estimate

PAPERS = builtin_profile("papers100M")
GRAPHBOLT = Workload(fanouts=[10, 10, 10], batch_size=1024, hidden_dim=256, gpus=1)
"""DGL GraphBolt's papers100M example ("disk_based_feature", dmlc/dgl): one A10G, g5.8xlarge."""


def priced(learner: str, memory: str | None = None, **workload) -> Estimate:
    request = EstimateRequest(
        dataset="papers100M", learner=learner, memory=memory, workload=GRAPHBOLT.model_copy(update=workload)
    )
    return estimate(request)


def step_and_copy_s(plan, gpu: str) -> tuple[float, float]:
    """One step on ``gpu`` and the copy of every row of the priced batch, in seconds."""
    shape = estimate_batch(PAPERS, GRAPHBOLT)
    classes = PAPERS.num_classes or 256
    work = step_work(shape.nodes_per_hop, shape.edges_per_hop, PAPERS.feature_dim, 256, classes, form="blocks")
    step = float(work.seconds(CO, CO.gpu_tflops[gpu], CO.gpu_memory_gbps[gpu]))
    return step, plan.batch.input_nodes * PAPERS.row_bytes / (CO.pcie_gbps * 1e9)


def test_the_copy_overlaps_the_step_instead_of_adding_to_it():
    plan = priced("p5.48xlarge").plan  # an H100: its step is shorter than copying every row
    step, copy = step_and_copy_s(plan, "H100")
    batches = plan.batch.batches_per_epoch
    assert step < copy
    assert plan.stages["gpu"] == pytest.approx(batches * copy, rel=1e-3)
    assert batches * (step + copy) - plan.stages["gpu"] == pytest.approx(batches * step, rel=1e-3)  # hidden whole


def test_rows_the_gpu_holds_are_not_copied():
    plain, cached = priced("p5.48xlarge").plan, priced("p5.48xlarge", gpu_cache_gib=5).plan
    reads_gb = plain.batch.batches_per_epoch * plain.batch.input_nodes * PAPERS.row_bytes / 1e9
    assert plain.batch.host_to_device_gb_per_epoch == pytest.approx(reads_gb, rel=1e-3)
    served = cached.data_path.served_by_gpu
    assert served == pytest.approx(PAPERS.curve("degree").hit_rate(5 * 2**30 / PAPERS.feature_bytes), rel=1e-3)
    assert cached.batch.host_to_device_gb_per_epoch == pytest.approx(reads_gb * (1 - served), rel=1e-3)
    assert cached.stages["gpu"] < 0.7 * plain.stages["gpu"]  # the H100 was waiting for its copies


def test_a_gpu_cache_is_a_tier_above_the_learner_ram_cache():
    """On a two-level cluster the GPU's rows are neither sent nor copied: the learner holds the top
    f_D + f_RAM of the ranking, its GPU the top f_D."""
    args = ("g5.8xlarge", "r6i.4xlarge")
    ram = priced(*args, learner_cache=10).plan.data_path
    both = priced(*args, learner_cache=10, gpu_cache_gib=5).plan.data_path
    curve = PAPERS.curve("degree")
    device, host = 5 * 2**30 / PAPERS.feature_bytes, 10 * 2**30 / PAPERS.feature_bytes
    assert both.served_by_gpu == pytest.approx(curve.hit_rate(device), rel=1e-3)
    assert both.served_by_learner == pytest.approx(curve.hit_rate(device + host), rel=1e-3)
    assert both.learner_cache_gib == pytest.approx(10) and both.gpu_cache_gib == pytest.approx(5)
    sent = 1 - both.served_by_learner
    assert both.wire_feature_gb_per_epoch == pytest.approx(
        ram.wire_feature_gb_per_epoch * sent / (1 - ram.served_by_learner), rel=1e-3
    )


def test_auto_takes_what_the_card_leaves_and_a_larger_cache_is_refused():
    auto = priced("g5.8xlarge", gpu_cache_gib="auto")
    free = auto.plan.data_path.gpu_cache_free_gib
    assert auto.feasible and auto.plan.data_path.gpu_cache_gib == pytest.approx(free, rel=1e-3)
    assert 10 < free < 24  # an A10G of 24 GB, less the model, the largest batch and a margin
    assert priced("g5.8xlarge", gpu_cache_gib=free - 0.01).feasible
    too_big = priced("g5.8xlarge", gpu_cache_gib=free + 0.01)
    assert not too_big.feasible and too_big.unrunnable.code == Unrunnable.GPU_CACHE_EXCEEDS_GPU
    assert "GPU cache" in too_big.reason and "GPU memory" in too_big.reason


def test_without_a_gpu_cache_the_graphbolt_setting_is_the_copy_alone():
    """The A10G's step in blocks (about 10 ms) is shorter than copying every row (28 ms): the step
    hides behind the copy, and a GPU cache is what shortens the stage."""
    plan = priced("g5.8xlarge").plan
    step, copy = step_and_copy_s(plan, "A10G")
    assert step < copy and plan.stages["gpu"] == pytest.approx(plan.batch.batches_per_epoch * copy, rel=1e-3)


def test_graphbolt_epoch_with_a_5_gb_gpu_cache():
    """DGL GraphBolt's papers100M example on one A10G with a 5 GB GPU cache: 28.3 s an epoch."""
    cached = priced("g5.8xlarge", gpu_cache_gib=5).plan
    assert cached.epoch_seconds == pytest.approx(28.3, rel=0.25)
    assert cached.epoch_seconds < 0.75 * priced("g5.8xlarge").plan.epoch_seconds
