"""Recommendations with the learner cache, the wire precision, pinned volumes and the large built-ins."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from contracts.plan import (
    GP3_MBPS_PER_IOPS,
    MAX_MEMORY_NODES,
    ClusterPlan,
    Constraints,
    Filters,
    PlanRequest,
    Recommendation,
)
from planner.datasets.builtin import BUILTIN, builtin_profile
from planner.solver.candidates import GP3_IOPS, GP3_THROUGHPUTS, gp3_options
from planner.solver.estimate import EstimateRequest, estimate
from planner.solver.recommend import recommend

TODAY = dt.date(2026, 11, 20)
CAP64 = Filters(max_memory_gib=64)
# The MemoryBridge paper's evaluation setting: G4dn learners (its P2 no longer exists and no P3 size
# fits 64 GiB in the snapshot), R6/R7/R8/C7/C8 memory machines, 64 GiB per machine, gp3 at its
# 125 MB/s and 3,000 IOPS baseline.
PAPER_SETTING = Filters(
    gpu_families=["g4dn"],
    memory_families=["r6i", "r6a", "r6g", "r6in", "r7i", "r7a", "r7g", "r7iz", "r8g", "r8i", "c7i", "c7g", "c8g"],
    max_memory_gib=64,
    volume_mbps=125,
    volume_iops=3000,
)


def plans(rec: Recommendation) -> list[ClusterPlan]:
    return [p for p in (rec.chosen, *rec.alternatives, rec.single_machine, rec.two_level) if p is not None]


def papers(**kw) -> Recommendation:
    body = {"dataset": "papers100M", "constraints": Constraints(budget_usd=50), "filters": CAP64, **kw}
    return recommend(PlanRequest(**body), today=TODAY)


def test_the_learner_cache_cuts_the_bytes_on_the_link_of_the_64_gib_answer():
    without = papers(workload={"learner_cache": "none"})
    with_cache = papers(workload={"learner_cache": "auto"})
    assert without.chosen.data_path.learner_cache_gib == 0
    assert without.chosen.bottleneck == "network"
    path = with_cache.chosen.data_path
    assert path.learner_cache_gib > 0 and path.served_by_learner > 0.5
    assert path.wire_gb_per_epoch < without.chosen.data_path.wire_gb_per_epoch / 5
    assert with_cache.chosen.total_usd < without.chosen.total_usd / 2
    if with_cache.chosen.bottleneck == "network":
        assert f"learner's {path.learner_cache_gib:.1f} GiB cache serves" in with_cache.chosen.explanation


def test_data_path_shares_add_up_and_match_the_stage_times():
    rec = papers()
    for plan in plans(rec):
        path = plan.data_path
        assert path is not None
        total = path.served_by_learner + path.served_by_memory + path.served_by_volume
        assert total == pytest.approx(1.0, abs=2e-4)
        if plan.layout == "single-machine":
            assert path.wire_dtype is None and path.wire_gb_per_epoch == 0 and path.learner_cache_gib == 0
        else:
            assert path.wire_dtype == "float32"
            assert path.learner_cache_gib <= path.learner_free_gib + 1e-3
            assert path.wire_feature_gb_per_epoch <= path.wire_gb_per_epoch


def test_float16_on_the_wire_halves_the_feature_bytes_of_a_plan():
    full = papers(workload={"learner_cache": "none"})
    half = papers(workload={"learner_cache": "none", "wire_dtype": "float16"})
    assert half.chosen.data_path.wire_dtype == "float16"
    assert half.chosen.total_usd < full.chosen.total_usd
    # The same cluster priced both ways: exactly half the feature bytes, the ids and edges unchanged.
    priced = {
        dtype: estimate(
            EstimateRequest(
                dataset="papers100M",
                learner="g4dn.4xlarge",
                memory="r6in.2xlarge",
                memory_count=2,
                workload={"learner_cache": "none", "wire_dtype": dtype},
            ),
            today=TODAY,
        ).plan.data_path
        for dtype in ("float32", "float16", "bfloat16")
    }
    assert priced["float16"].wire_feature_gb_per_epoch == pytest.approx(priced["float32"].wire_feature_gb_per_epoch / 2)
    assert priced["bfloat16"] == priced["float16"].model_copy(update={"wire_dtype": "bfloat16"})
    ids = priced["float32"].wire_gb_per_epoch - priced["float32"].wire_feature_gb_per_epoch
    assert priced["float16"].wire_gb_per_epoch == pytest.approx(ids + priced["float16"].wire_feature_gb_per_epoch)


def test_the_plan_says_what_each_memory_machine_reads_at_start_up_and_copies_at_staging():
    """papers100M (56.9 GB of features, 14.7 GB of structure) over two memory machines: dealt in
    stripes or ranges each copies the structure and its half of the file, and reads at most that;
    dealt modulo each copies the whole file and reads more of it, on a larger volume."""
    profile = builtin_profile("papers100M")
    priced = {
        layout: estimate(
            EstimateRequest(
                dataset="papers100M",
                learner="g4dn.4xlarge",
                memory="r6in.2xlarge",
                memory_count=2,
                workload={"learner_cache": "none", "shard_layout": layout},
            ),
            today=TODAY,
        ).plan
        for layout in ("striped", "range", "modulo")
    }
    half = (profile.structure_bytes + profile.feature_bytes / 2) / 1e9
    for layout in ("striped", "range"):
        path = priced[layout].data_path
        assert path.shard_layout == layout
        assert path.staged_gb_per_machine == pytest.approx(half, abs=0.07)  # parts differ by a 64 MiB block at most
        assert profile.structure_bytes / 1e9 < path.startup_read_gb_per_machine <= path.staged_gb_per_machine
    modulo = priced["modulo"]
    assert modulo.data_path.staged_gb_per_machine == pytest.approx(profile.total_bytes / 1e9, abs=1e-3)
    assert modulo.data_path.startup_read_gb_per_machine > priced["striped"].data_path.startup_read_gb_per_machine
    assert modulo.startup_seconds > priced["striped"].startup_seconds
    assert modulo.volume.size_gb > priced["striped"].volume.size_gb
    assert modulo.epoch_seconds == priced["striped"].epoch_seconds
    # One machine holds and stages every row, whatever the layout asked for.
    alone = estimate(
        EstimateRequest(dataset="papers100M", learner="g5.12xlarge", workload={"shard_layout": "modulo"}), today=TODAY
    ).plan.data_path
    assert alone.shard_layout is None and alone.staged_gb_per_machine == pytest.approx(
        profile.total_bytes / 1e9, abs=1e-3
    )


def test_compact_frames_and_learner_sampling_put_the_64_gib_answer_well_under_its_int64_bytes():
    """int64 frames sent 27.9 GB an epoch here, 22.8 GB of it ids and edges (16 B a node, 24 B an edge)."""
    memory = papers(workload={"sampling": "memory"}).chosen
    learner = papers(workload={"sampling": "learner"}).chosen
    auto = papers().chosen
    assert memory.data_path.sampling == "memory" and learner.data_path.sampling == "learner"
    assert memory.data_path.wire_gb_per_epoch <= 20
    for plan in (memory, learner):
        path = plan.data_path
        assert path.wire_gb_per_epoch == pytest.approx(
            path.wire_feature_gb_per_epoch + path.wire_id_gb_per_epoch, abs=2e-3
        )
    # A sampling learner is sent no structure, but its CSC leaves its cache fewer rows.
    assert learner.data_path.wire_id_gb_per_epoch < memory.data_path.wire_id_gb_per_epoch / 10
    assert learner.data_path.learner_csc_gib > 0 and memory.data_path.learner_csc_gib == 0
    # Auto keeps the cheaper of the two (then the faster).
    assert (auto.total_usd, auto.total_hours) <= min(
        (memory.total_usd, memory.total_hours), (learner.total_usd, learner.total_hours)
    )


def test_the_sampling_mode_is_the_one_asked_for_on_every_two_level_plan():
    for mode in ("memory", "learner"):
        for plan in plans(papers(workload={"sampling": mode})):
            assert plan.data_path.sampling == (mode if plan.layout == "two-level" else None)


def test_a_paper_model_plan_has_no_data_path():
    rec = recommend(PlanRequest(dataset="papers100M", model="paper", filters=PAPER_SETTING), today=TODAY)
    assert rec.chosen.data_path is None


def test_the_papers_setting_gives_the_papers_answer_with_the_paper_model():
    """With the paper's constraints, equations (3)-(8) pick g4dn.xlarge + one 64 GiB memory machine.

    That is the paper's Table III comparison (a cheap GPU next to a 64 GiB memory machine instead
    of one large GPU machine); the machine it picks, r6g.2xlarge, makes $0.929/h of instances, the
    paper's reported $0.93/h for its planner's recommendation.
    """
    rec = recommend(PlanRequest(dataset="papers100M", model="paper", filters=PAPER_SETTING), today=TODAY)
    chosen = rec.chosen
    assert chosen.layout == "two-level" and chosen.label == "g4dn.xlarge + 1x r6g.2xlarge"
    assert chosen.memory.memory_gib == 64
    assert (chosen.volume.throughput_mbps, chosen.volume.iops) == (125, 3000)
    instances = chosen.learner.usd_per_hour_each + chosen.memory.usd_per_hour_each
    assert round(instances, 2) == 0.93
    assert rec.single_machine.total_usd > chosen.total_usd
    # Unpinned, the solver buys faster gp3 and another memory machine, away from the paper's answer.
    free = recommend(
        PlanRequest(
            dataset="papers100M",
            model="paper",
            filters=PAPER_SETTING.model_copy(update={"volume_mbps": None, "volume_iops": None}),
        ),
        today=TODAY,
    )
    assert free.chosen.volume.throughput_mbps > 125


@pytest.mark.parametrize(("mbps", "iops"), [(125, None), (None, 3000), (125, 3000), (400, None), (500, 16000)])
def test_a_pinned_volume_is_the_only_one_priced(mbps, iops):
    rec = papers(filters=CAP64.model_copy(update={"volume_mbps": mbps, "volume_iops": iops}))
    for plan in plans(rec):
        assert mbps is None or plan.volume.throughput_mbps == mbps
        assert iops is None or plan.volume.iops == iops
        assert plan.volume.throughput_mbps <= GP3_MBPS_PER_IOPS * plan.volume.iops


def test_pinned_options_keep_gp3s_ratio():
    assert gp3_options() == tuple((t, i) for t in GP3_THROUGHPUTS for i in GP3_IOPS if t <= 0.25 * i)
    assert gp3_options(mbps=1000) == ((1000, 6000), (1000, 10000), (1000, 16000))
    assert gp3_options(iops=3000) == ((125, 3000), (250, 3000), (500, 3000))
    assert gp3_options(125, 3000) == ((125, 3000),)


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"volume_mbps": 2000}, "volume_mbps"),
        ({"volume_mbps": 100}, "volume_mbps"),
        ({"volume_iops": 20000}, "volume_iops"),
        ({"volume_mbps": 1000, "volume_iops": 3000}, "volume_mbps"),
        ({"max_memory_nodes": MAX_MEMORY_NODES + 1}, "max_memory_nodes"),
    ],
)
def test_bad_filters_name_their_field(update, field):
    with pytest.raises(ValidationError) as info:
        Filters(**update)
    (error,) = info.value.errors()
    assert error["loc"] == (field,)


def test_the_new_builtins_carry_their_published_sizes():
    igb = builtin_profile("IGB260M")
    assert (igb.num_nodes, igb.num_edges, igb.feature_dim, igb.feature_dtype) == (
        269_346_174,
        3_995_777_033,
        1024,
        "float32",
    )
    assert igb.num_train == int(227_130_858 * 0.6) and "published" in igb.source
    mag = BUILTIN["mag240m"]
    assert (mag.num_nodes, mag.num_edges, mag.feature_rows, mag.feature_dim, mag.feature_dtype) == (
        244_160_499,
        1_728_364_232,
        121_751_666,
        768,
        "float16",
    )
    assert igb.feature_bytes > 1e12 and mag.feature_bytes > 1.8e11


def test_a_graph_no_affordable_gpu_machine_holds_is_recommended_two_level():
    # One GPU training: with all eight of a p4d.24xlarge, its own RAM and volume feed them cheaper.
    workload = {"epochs": 1, "learner_cache": "auto", "gpus": 1}
    rec = recommend(PlanRequest(dataset="igb260m", workload=workload), today=TODAY)
    assert rec.chosen.layout == "two-level"
    assert rec.single_machine.total_usd > rec.chosen.total_usd


def test_one_epoch_of_mag240m_goes_two_level_once_each_memory_machine_reads_only_its_part():
    # mag240m's 187 GB fit a g6.16xlarge alone. Rows dealt modulo, each memory machine's start-up
    # reads nearly the whole feature file and two-level loses; dealt in stripes (the default), each
    # reads its own part and a two-level cluster starts sooner and costs less (docs/planner.md,
    # "Where the two-level design wins").
    workload = {"epochs": 1, "learner_cache": "auto"}
    modulo = recommend(PlanRequest(dataset="mag240m", workload={**workload, "shard_layout": "modulo"}), today=TODAY)
    assert modulo.chosen.layout == "single-machine"
    assert modulo.two_level.total_usd > modulo.chosen.total_usd
    striped = recommend(PlanRequest(dataset="mag240m", workload=workload), today=TODAY)
    assert striped.chosen.layout == "two-level" and striped.chosen.data_path.shard_layout == "striped"
    assert striped.chosen.total_usd < striped.single_machine.total_usd
    assert striped.chosen.startup_seconds < modulo.two_level.startup_seconds
    # One machine holds every row whichever way rows would be dealt: its plan does not change.
    assert striped.single_machine.label == modulo.single_machine.label
    assert striped.single_machine.total_usd == modulo.single_machine.total_usd
    assert striped.single_machine.data_path.shard_layout is None


def test_up_to_16_memory_machines_when_a_graph_needs_them():
    capped = Filters(max_memory_gib=64, gpu_families=["g4dn"], memory_families=["r6g", "r7g", "r8g"])
    four = recommend(PlanRequest(dataset="igb260m", workload={"epochs": 1}, filters=capped), today=TODAY)
    assert four.chosen.memory.count == 4
    assert any("most memory machines allowed (4)" in w for w in four.warnings)
    sixteen = recommend(
        PlanRequest(
            dataset="igb260m",
            workload={"epochs": 1},
            filters=capped.model_copy(update={"max_memory_nodes": MAX_MEMORY_NODES}),
        ),
        today=TODAY,
    )
    assert 4 < sixteen.chosen.memory.count <= MAX_MEMORY_NODES
    assert sixteen.chosen.total_usd < four.chosen.total_usd
    assert not any("most memory machines allowed" in w for w in sixteen.warnings)


def test_a_plan_file_from_before_the_data_path_still_loads():
    rec = papers()
    document = rec.model_dump(mode="json")
    for plan in [document["chosen"], *document["alternatives"], document["single_machine"], document["two_level"]]:
        del plan["data_path"]
    for name in ("learner_cache", "wire_dtype"):
        del document["request"]["workload"][name]
    for name in ("volume_mbps", "volume_iops"):
        del document["request"]["filters"][name]
    old = Recommendation.model_validate(document)
    assert old.chosen.data_path is None and old.chosen.label == rec.chosen.label
