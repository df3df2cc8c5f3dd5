"""The learner cache and the wire precision in the pipeline model, against figures computed by hand.

A small graph on a two-row catalog (one learner, one memory machine) keeps every figure exact:
1,000,000 rows of 256 x float32 (1,024 B; 1.024 GB in all), a cache curve H(x) = 1.6 x up to
x = 0.5 (then 0.8 + 0.4 (x - 0.5)), and a measured batch shape of 10,000 nodes and 10,000 edges,
100 batches per epoch.
"""

from __future__ import annotations

import numpy as np
import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import Unrunnable
from contracts.profile import DatasetProfile, MeasuredBatch
from contracts.wirebytes import batch_overhead_bytes, compact_edge_bytes, compact_node_bytes, fanout_count_bytes
from contracts.workload import Workload
from foundation.units import GIB
from planner.catalog.models import InstanceType
from planner.catalog.snapshot import InstanceColumns
from planner.costmodel import pipeline
from planner.costmodel.evaluation import FEASIBLE, Clusters, ModelInputs

ROWS, DIM = 1_000_000, 256
FEATURES = ROWS * DIM * 4  # 1.024 GB
STRUCTURE = 10**8
READS = 100 * 10_000  # rows sampled per epoch: 100 batches of 10,000 nodes
# A compact frame's structure: 10,000 nodes' positions (no labels), the 1,000 seeds' edge counts
# (the 9,000 last-hop nodes have no edges sampled) and 10,000 edges' source indices.
FRAME_IDS = (
    10_000 * compact_node_bytes(ROWS, None) + 1_000 * fanout_count_bytes([10]) + 10_000 * compact_edge_bytes(10_000)
)
# Besides rows, each of the 100 batches also sends its frame's header and table, and a credit.
IDS_PER_EPOCH = 100 * (FRAME_IDS + batch_overhead_bytes(1, learner_samples=False))
LINK_BYTES_S = 10e9 / 8 * DEFAULT_COEFFICIENTS.network_efficiency
CO = DEFAULT_COEFFICIENTS

PROFILE = DatasetProfile(
    name="hand",
    num_nodes=ROWS,
    num_edges=20 * ROWS,
    feature_rows=ROWS,
    feature_dim=DIM,
    num_train=100_000,
    structure_bytes=STRUCTURE,
    cache_curves={"degree": [(0.5, 0.8)]},
    batch_shapes=[
        MeasuredBatch(fanouts=[10], batch_size=1000, nodes_per_hop=[1000, 9000], edges_per_hop=[10_000], batches=8)
    ],
)


def H(x: float) -> float:
    return 1.6 * x if x <= 0.5 else 0.8 + 0.4 * (x - 0.5)


def machine(name: str, memory_gib: float, gpu: bool) -> InstanceType:
    return InstanceType(
        name=name,
        family=name.split(".")[0],
        vcpus=8,
        memory_gib=memory_gib,
        arch="x86_64",
        gpu_model="T4" if gpu else None,
        gpu_count=1 if gpu else 0,
        gpu_memory_gib=16 if gpu else 0,
        ebs_baseline_mbps=1000,
        ebs_baseline_iops=40_000,
        network_baseline_gbps=10,
        ondemand_usd_per_hour=1.0,
        price_provenance="listed",
    )


def evaluate(learner_gib: float, memory_share: float = 0.25, coefficients=DEFAULT_COEFFICIENTS, **workload):
    """One learner + one memory machine whose cache holds ``memory_share`` of the rows; the memory
    machine samples unless the workload says otherwise."""
    workload.setdefault("sampling", "memory")
    memory_gib = CO.os_reserve_gib + (STRUCTURE + memory_share * FEATURES) / GIB
    columns = InstanceColumns.from_instances(
        [machine("lrn.x", learner_gib, gpu=True), machine("mem.x", memory_gib, gpu=False)]
    )
    inputs = ModelInputs(
        columns=columns,
        volume=_gp3(),
        profile=PROFILE,
        workload=Workload(fanouts=[10], batch_size=1000, **workload),
        coefficients=coefficients,
    )
    clusters = Clusters(
        learner=np.array([0]),
        memory=np.array([1]),
        count=np.array([1]),
        volume_mbps=np.array([1000.0]),
        volume_iops=np.array([16000.0]),
    )
    ev = pipeline.evaluate(inputs, clusters)
    return ev, ev.detail_at(0)


def _gp3():
    from planner.catalog.volumes import VOLUME_TYPES

    return next(v for v in VOLUME_TYPES if v.name == "gp3")


QUARTER_GIB = 0.25 * FEATURES / GIB  # a learner cache of a quarter of the rows


def test_a_quarter_on_the_learner_and_the_next_quarter_on_the_memory_machine():
    ev, d = evaluate(learner_gib=64, learner_cache=QUARTER_GIB)
    assert d["learner_cache_fraction"] == pytest.approx(0.25)
    assert d["learner_hit_rate"] == pytest.approx(H(0.25))  # 0.4 of reads never leave the learner
    assert d["hit_rate"] == pytest.approx(H(0.5) - H(0.25))  # the memory machine's RAM serves the next 0.4
    assert d["volume_share"] == pytest.approx(1 - H(0.5))  # 0.2 miss both
    assert d["memory_hit_rate"] == pytest.approx((H(0.5) - H(0.25)) / (1 - H(0.25)))  # 2/3 of what is sent
    feature_wire = READS * (1 - H(0.25)) * DIM * 4
    assert d["epoch_wire_feature_gb"] * 1e9 == pytest.approx(feature_wire)
    assert d["epoch_wire_gb"] * 1e9 == pytest.approx(IDS_PER_EPOCH + feature_wire)
    assert ev.stages["network"][0] == pytest.approx((IDS_PER_EPOCH + feature_wire) / LINK_BYTES_S)
    assert d["misses_per_machine"] == pytest.approx(READS * (1 - H(0.5)))


def test_the_learner_keeps_rows_at_the_wire_precision_so_the_same_bytes_hold_twice_the_rows():
    _, d = evaluate(learner_gib=64, learner_cache=QUARTER_GIB, wire_dtype="float16")
    assert d["learner_cache_fraction"] == pytest.approx(0.5)  # a quarter of the float32 bytes: half the rows
    assert d["learner_cache_gib"] == pytest.approx(QUARTER_GIB)
    assert d["learner_hit_rate"] == pytest.approx(H(0.5))
    assert d["epoch_wire_feature_gb"] * 1e9 == pytest.approx(READS * (1 - H(0.5)) * DIM * 2)


def test_the_learner_cache_lowers_network_bytes_and_time_as_the_model_says():
    none, d_none = evaluate(learner_gib=64, learner_cache="none")
    cached, d_cached = evaluate(learner_gib=64, learner_cache=QUARTER_GIB)
    assert d_none["epoch_wire_gb"] * 1e9 == pytest.approx(IDS_PER_EPOCH + READS * DIM * 4)
    saved = READS * H(0.25) * DIM * 4  # the rows the learner holds are never sent
    assert (d_none["epoch_wire_gb"] - d_cached["epoch_wire_gb"]) * 1e9 == pytest.approx(saved)
    assert none.stages["network"][0] - cached.stages["network"][0] == pytest.approx(saved / LINK_BYTES_S)
    # The memory machine gathers only what it sends.
    assert cached.stages["cpu"][0] < none.stages["cpu"][0]


def test_memory_caches_that_repeat_the_learners_rows_serve_less():
    repeat = DEFAULT_COEFFICIENTS.model_copy(update={"memory_cache_skips_learner_rows": False})
    _, d = evaluate(learner_gib=64, coefficients=repeat, learner_cache=QUARTER_GIB)
    assert d["hit_rate"] == pytest.approx(0.0)  # its quarter is the learner's quarter
    assert d["volume_share"] == pytest.approx(1 - H(0.25))


def test_float16_on_the_wire_halves_the_feature_bytes():
    _, full = evaluate(learner_gib=64, learner_cache="none")
    _, half = evaluate(learner_gib=64, learner_cache="none", wire_dtype="float16")
    _, brain = evaluate(learner_gib=64, learner_cache="none", wire_dtype="bfloat16")
    assert half["epoch_wire_feature_gb"] == pytest.approx(full["epoch_wire_feature_gb"] / 2)
    assert brain["epoch_wire_feature_gb"] == pytest.approx(half["epoch_wire_feature_gb"])
    assert half["epoch_wire_gb"] * 1e9 == pytest.approx(IDS_PER_EPOCH + READS * DIM * 2)


def test_a_wire_dtype_never_widens_float16_rows():
    assert pipeline.wire_value_bytes("float32", "float16") == 2
    assert pipeline.wire_dtype_name(Workload(), "float16", 2.0) == "float16"
    assert pipeline.wire_dtype_name(Workload(wire_dtype="bfloat16"), "float32", 2.0) == "bfloat16"
    assert pipeline.wire_dtype_name(Workload(wire_dtype="auto"), "float32", 2.0) == "float16"
    assert pipeline.wire_dtype_name(Workload(wire_dtype="auto"), "float32", 4.0) == "float32"


def test_a_learner_without_spare_ram_gets_no_cache():
    reserves = CO.os_reserve_gib + CO.learner_reserve_gib
    ev, d = evaluate(learner_gib=reserves, learner_cache="auto")
    assert d["learner_free_gib"] == 0.0 and d["learner_cache_gib"] == 0.0
    _, none = evaluate(learner_gib=reserves, learner_cache="none")
    assert d["epoch_wire_gb"] == pytest.approx(none["epoch_wire_gb"])
    assert ev.infeasible[0] == FEASIBLE
    # Asking for a cache it cannot hold makes the cluster unrunnable, with its own reason.
    asked, _ = evaluate(learner_gib=reserves, learner_cache=0.5)
    assert asked.infeasible[0] == Unrunnable.LEARNER_CACHE_EXCEEDS_RAM


def test_free_learner_ram_is_left_after_reserves_and_batches_in_flight():
    _, d = evaluate(learner_gib=20, learner_cache="auto")
    batch_bytes = 10_000 * DIM * 4 + FRAME_IDS
    expected = 20 * GIB - (CO.os_reserve_gib + CO.learner_reserve_gib) * GIB - 4 * batch_bytes
    assert d["learner_free_gib"] * GIB == pytest.approx(expected)


def test_auto_caches_as_much_as_fits_where_the_link_bounds_the_epoch():
    none, _ = evaluate(learner_gib=12.5, memory_share=1.0, learner_cache="none")
    assert none.bottleneck[0] == none.stage_names.index("network")
    auto, d = evaluate(learner_gib=12.5, memory_share=1.0, learner_cache="auto")  # ~0.46 GiB free: half the rows
    assert d["learner_cache_gib"] == pytest.approx(d["learner_free_gib"])
    assert 0 < d["learner_cache_gib"] < FEATURES / GIB
    assert auto.total_hours[0] < none.total_hours[0]


def test_auto_keeps_no_cache_where_it_saves_nothing():
    # The GPU bounds the epoch whatever crosses the link: a cache would only add its fill (ties keep none).
    slow_gpu = DEFAULT_COEFFICIENTS.model_copy(update={"gpu_step_overhead_s": 10.0})
    ev, d = evaluate(learner_gib=64, memory_share=1.0, coefficients=slow_gpu, learner_cache="auto")
    assert ev.bottleneck[0] == ev.stage_names.index("gpu")
    assert d["learner_cache_gib"] == 0.0 and d["learner_free_gib"] > FEATURES / GIB


def test_auto_wire_chooses_float16_only_where_it_pays():
    slow_gpu = DEFAULT_COEFFICIENTS.model_copy(update={"gpu_step_overhead_s": 10.0})
    kw = {"learner_gib": 64, "memory_share": 1.0, "learner_cache": "none", "wire_dtype": "auto"}
    _, gpu_bound = evaluate(coefficients=slow_gpu, **kw)
    assert gpu_bound["wire_value_bytes"] == 4  # ties keep the exact wire
    _, d = evaluate(**kw)
    assert d["wire_value_bytes"] == 2 and d["epoch_wire_gb"] * 1e9 == pytest.approx(IDS_PER_EPOCH + READS * DIM * 2)


@pytest.mark.parametrize(
    ("value", "parsed"),
    [("auto", "auto"), ("none", "none"), ("32", 32.0), (12, 12.0), (0.5, 0.5)],
)
def test_learner_cache_values(value, parsed):
    assert Workload(learner_cache=value).learner_cache == parsed


@pytest.mark.parametrize("value", ["big", "0", -1, True, "nan", 1e9])
def test_bad_learner_cache_values_name_the_field_once(value):
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as info:
        Workload(learner_cache=value)
    (error,) = info.value.errors()
    assert error["loc"] == ("learner_cache",) and "auto, none or a size in GiB" in error["msg"]


def test_derived_figures_are_the_same_for_one_cluster_and_for_all(catalog, index):
    from planner.datasets.builtin import builtin_profile
    from tests.planner.conftest import make_clusters

    inputs = ModelInputs(
        columns=catalog.columns,
        volume=catalog.volumes["gp3"],
        profile=builtin_profile("papers100M"),
        workload=Workload(wire_dtype="auto"),
        coefficients=DEFAULT_COEFFICIENTS,
    )
    clusters = make_clusters(
        index,
        [
            ("g4dn.4xlarge", "r6in.2xlarge", 2, 500, 3000),
            ("g4dn.xlarge", "r8g.xlarge", 1, 125, 3000),
            ("g6.4xlarge", None, 0, 1000, 16000),
        ],
    )
    ev = pipeline.evaluate(inputs, clusters)
    for i in range(3):
        one = ev.detail_at(i)
        assert one.keys() == set(ev.details)
        for name, value in one.items():
            assert float(ev.details[name][i]) == pytest.approx(value, nan_ok=True), name
