"""Every GPU the plan pays for trains: a learner with g GPUs trains on min(g, gpus) data-parallel
ranks, which share the epoch's steps at ``data_parallel_efficiency`` each; the epoch's batches, and
so the CPU's and the link's work per epoch, stay the same; each rank's process and buffers take
learner RAM."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import PlanRequest
from contracts.workload import Workload
from planner.catalog.snapshot import load_catalog
from planner.cli.main import app
from planner.costmodel import pipeline
from planner.datasets.builtin import builtin_profile
from planner.solver.recommend import recommend
from tests.planner.conftest import make_clusters
from tests.planner.costmodel.test_pipeline import inputs_for

FOUR_GPUS = ("g5.12xlarge", "r6in.2xlarge", 1, 125, 3000)  # four A10Gs
ONE_GPU = ("g5.4xlarge", "r6in.2xlarge", 1, 125, 3000)


def evaluate(catalog, index, gpus: int | None, cluster=FOUR_GPUS):
    return pipeline.evaluate(inputs_for(catalog, learner_cache="none", gpus=gpus), make_clusters(index, [cluster]))


def test_four_gpus_take_a_quarter_of_one_gpus_time_by_the_efficiency_and_feed_at_the_same_bytes(catalog, index):
    one, four = evaluate(catalog, index, gpus=1), evaluate(catalog, index, gpus=None)
    efficiency = DEFAULT_COEFFICIENTS.data_parallel_efficiency
    assert four.stages["gpu"][0] == pytest.approx(one.stages["gpu"][0] / (4 * efficiency))
    for stage in ("cpu", "network", "volume"):  # the same batches an epoch: only faster to keep up
        assert four.stages[stage][0] == pytest.approx(one.stages[stage][0])
    assert (one.detail_at(0)["learner_ranks"], four.detail_at(0)["learner_ranks"]) == (1, 4)
    assert evaluate(catalog, index, gpus=2).detail_at(0)["learner_ranks"] == 2
    assert evaluate(catalog, index, gpus=8, cluster=ONE_GPU).detail_at(0)["learner_ranks"] == 1  # it has one


def test_each_rank_takes_its_process_and_buffers_from_the_learners_ram(catalog):
    one = pipeline.learner_free_bytes_by_type(inputs_for(catalog, gpus=1))
    four = pipeline.learner_free_bytes_by_type(inputs_for(catalog, gpus=None))
    g5 = next(i for i, t in enumerate(catalog.columns.instances) if t.name == "g5.12xlarge")
    inputs = inputs_for(catalog)
    per_rank = (
        DEFAULT_COEFFICIENTS.learner_reserve_gib * 2**30 + pipeline.LEARNER_BATCH_BUFFERS * inputs.batch.wire_bytes
    )
    assert one[g5] - four[g5] == pytest.approx(3 * per_rank)


def test_a_plan_says_how_many_gpus_train_and_why_the_gpu_stage_takes_what_it_does():
    request = PlanRequest(
        dataset="papers100M",
        workload=Workload(epochs=30),  # long enough that the epoch, not the start-up, sets the price
        filters={"gpu_families": ["g6"], "memory_families": ["r6in"]},
    )
    chosen = recommend(request).chosen  # four L4s alone beat one L4 fed by memory machines
    assert chosen is not None and chosen.learner is not None
    assert (chosen.learner.instance_type, chosen.learner_ranks, chosen.bottleneck) == ("g6.12xlarge", 4, "gpu")
    assert "shared by 4 L4 GPUs of g6.12xlarge" in chosen.explanation
    capped = recommend(request.model_copy(update={"workload": Workload(epochs=30, gpus=2)}))
    plans = [p for p in [capped.chosen, *capped.alternatives] if p is not None]
    assert plans and all(p.learner_ranks is not None and p.learner_ranks <= 2 for p in plans)


@pytest.mark.parametrize("gpus", [0, -1, 17])
def test_bad_gpu_counts_are_refused_naming_the_field(gpus):
    with pytest.raises(ValidationError, match="gpus"):
        Workload(gpus=gpus)
    done = CliRunner().invoke(app, ["recommend", "-d", "papers100M", "--gpus", str(gpus)])
    assert done.exit_code != 0 and "gpus" in done.output


def test_two_learner_machines_halve_the_gpu_stage_double_the_learners_price_and_their_links(catalog, index):
    one = pipeline.evaluate(inputs_for(catalog, learner_cache="none"), make_clusters(index, [FOUR_GPUS]))
    two = pipeline.evaluate(
        inputs_for(catalog, learner_cache="none", learner_machines=2), make_clusters(index, [FOUR_GPUS])
    )
    assert two.stages["gpu"][0] == pytest.approx(one.stages["gpu"][0] / 2)  # 8 ranks against 4, both at 0.9
    learner_price = catalog.columns.price(False)[index["g5.12xlarge"]]
    assert two.hourly_usd[0] - one.hourly_usd[0] == pytest.approx(learner_price)
    d_one, d_two = one.detail_at(0), two.detail_at(0)
    assert (d_one["learner_ranks"], d_two["learner_ranks"]) == (4, 8)
    assert d_two["link_gbps_both"] >= d_one["link_gbps_both"]  # each memory machine streams to both learners


def test_each_learner_machine_fills_its_own_cache_over_the_memory_machines_link(catalog, index):
    """One r6i.4xlarge sends at 6.25 Gbit/s whether one learner or two take it, so two learners'
    whole-feature caches take twice one's fill, and the start-up (volume-bound for one) is that."""
    cluster = ("g5.12xlarge", "r6i.4xlarge", 1, 1000, 16000)
    one, two = (
        pipeline.evaluate(
            inputs_for(catalog, learner_cache=60, learner_machines=m, sampling="memory"),
            make_clusters(index, [cluster]),
        )
        for m in (1, 2)
    )
    d_one, d_two = one.detail_at(0), two.detail_at(0)
    assert d_one["link_gbps_both"] == d_two["link_gbps_both"] == 6.25 and d_two["learner_cache_fraction"] == 1.0
    profile = builtin_profile("papers100M")
    cache_bytes = profile.num_nodes * profile.feature_dim * d_one["wire_value_bytes"]
    one_fill_s = cache_bytes / (6.25e9 / 8 * DEFAULT_COEFFICIENTS.network_efficiency)
    fixed = d_one["startup_fixed_s"]  # launching the job and choosing the caches come first
    assert one.startup_s[0] > fixed + one_fill_s  # one learner's fill hides behind the volume's read
    assert two.startup_s[0] == pytest.approx(fixed + 2 * one_fill_s)


def test_several_learner_machines_need_memory_machines_and_the_pipeline_model(catalog, index):
    from contracts.plan import Unrunnable

    alone = ("g5.12xlarge", None, 0, 1000, 6000)
    ev = pipeline.evaluate(inputs_for(catalog, learner_machines=2), make_clusters(index, [alone, FOUR_GPUS]))
    assert list(ev.infeasible) == [Unrunnable.ONE_LEARNER_ALONE, 0]
    for request in (
        {"model": "paper"},
        {"method": "retexo", "filters": {"gpu_families": []}},
    ):
        with pytest.raises(ValidationError, match="learner_machines"):
            PlanRequest(dataset="papers100M", workload={"learner_machines": 2}, **request)


def test_a_plan_of_two_learner_machines_names_them_and_their_gpus():
    request = PlanRequest(
        dataset="igb260m",
        workload={"epochs": 1, "learner_machines": 2},
        filters={"gpu_families": ["g5"], "memory_families": ["r6in"]},
    )
    chosen = recommend(request).chosen
    assert chosen is not None and chosen.learner is not None and chosen.learner.count == 2
    gpus = next(t.gpu_count for t in load_catalog().snapshot.instances if t.name == chosen.learner.instance_type)
    assert chosen.label.startswith("2x g5.") and chosen.learner_ranks == 2 * gpus
    done = CliRunner().invoke(app, ["recommend", "-d", "papers100M", "--learner-machines", "9"])
    assert done.exit_code != 0 and "--learner-machines" in done.output
