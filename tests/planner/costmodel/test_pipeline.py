"""The pipeline model's stages respond to the resources that bound them, and nothing else."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS, Coefficients, load_coefficients
from contracts.plan import Unrunnable
from contracts.profile import DatasetProfile, csr_csc_bytes
from contracts.shards import READAHEAD_BYTES
from contracts.workload import Workload
from foundation.errors import InputFileError
from planner.costmodel import pipeline
from planner.costmodel.batch import estimate_batch
from planner.costmodel.evaluation import (
    ENA_EXPRESS_FLOW_CAP_GBPS,
    FEASIBLE,
    FLOW_CAP_GBPS,
    ModelInputs,
    first_unrunnable,
)
from planner.datasets.builtin import builtin_profile
from tests.planner.conftest import make_clusters


def inputs_for(catalog, profile="papers100M", coefficients=DEFAULT_COEFFICIENTS, **workload):
    prof = builtin_profile(profile) if isinstance(profile, str) else profile
    return ModelInputs(
        columns=catalog.columns,
        volume=catalog.volumes["gp3"],
        profile=prof,
        workload=Workload(**workload),
        coefficients=coefficients,
    )


def test_more_ram_caches_more_and_reads_less_from_the_volume(catalog, index):
    ev = pipeline.evaluate(
        inputs_for(catalog, learner_cache="none"),  # the memory machine's cache alone
        make_clusters(
            index,
            [
                ("g4dn.xlarge", "r8g.xlarge", 1, 125, 3000),  # 32 GiB
                ("g4dn.xlarge", "r8g.2xlarge", 1, 125, 3000),  # 64 GiB
                ("g4dn.xlarge", "r8g.4xlarge", 1, 125, 3000),  # 128 GiB: everything fits
            ],
        ),
    )
    cache = ev.details["cache_fraction"]
    assert cache[0] < cache[1] < cache[2] == 1.0
    volume = ev.stages["volume"]
    assert volume[0] > volume[1] > volume[2] == 0.0


def test_miss_heavy_volume_stage_is_iops_bound_at_page_granularity(catalog, index):
    co = DEFAULT_COEFFICIENTS
    clusters = make_clusters(
        index,
        [
            ("g4dn.xlarge", "r8g.2xlarge", 1, 125, 3000),
            ("g4dn.xlarge", "r8g.2xlarge", 1, 1000, 3000 * 4),  # more MB/s and more IOPS
            ("g4dn.xlarge", "r8g.2xlarge", 1, 1000, 3000),  # more MB/s only
        ],
    )
    ev = pipeline.evaluate(inputs_for(catalog), clusters)
    misses = ev.details["misses_per_machine"]
    # One I/O per miss: 3,000 IOPS at the achieved share bounds the stage...
    assert ev.stages["volume"][0] == pytest.approx(misses[0] / (3000 * co.volume_efficiency))
    # ...and MB/s (a 512 B row costs a 4 KiB page, one in eight two) would allow far more.
    assert misses[0] * 4096 / (125e6 * co.volume_efficiency) < ev.stages["volume"][0]
    assert ev.stages["volume"][2] == pytest.approx(ev.stages["volume"][0])  # MB/s alone does not help
    assert ev.stages["volume"][1] < ev.stages["volume"][0] / 3  # IOPS does


@pytest.mark.parametrize(("dim", "pages"), [(128, 1 + 511 / 4096), (1024, 1 + 4095 / 4096), (3072, 3 + 4095 / 4096)])
def test_a_miss_reads_the_pages_its_row_spans_after_the_files_header(catalog, index, dim, pages):
    """Rows follow the .npy header, so they straddle pages: a 4 KiB row reads two, 512 B rows 1.125 on average."""
    prof = builtin_profile("papers100M").model_copy(update={"feature_dim": dim})
    inputs = inputs_for(catalog, prof)
    assert inputs.miss_bytes == pytest.approx(pages * 4096)
    clusters = make_clusters(index, [("g4dn.xlarge", "r8g.2xlarge", 1, 20, 64000)])  # MB/s-bound
    ev = pipeline.evaluate(inputs, clusters)
    misses = ev.details["misses_per_machine"][0]
    co = DEFAULT_COEFFICIENTS
    assert ev.stages["volume"][0] == pytest.approx(misses * pages * 4096 / (20e6 * co.volume_efficiency))


def test_instance_ebs_baseline_caps_the_volume(catalog, index):
    ev = pipeline.evaluate(inputs_for(catalog), make_clusters(index, [("g4dn.xlarge", "r8g.medium", 1, 1000, 16000)]))
    r8g = catalog.instance("r8g.medium")
    assert ev.details["volume_iops_effective"][0] == pytest.approx(
        min(r8g.ebs_baseline_iops, 16000) * DEFAULT_COEFFICIENTS.volume_efficiency
    )


def test_link_is_the_smaller_of_learner_and_combined_memory_baselines(catalog, index):
    ev = pipeline.evaluate(
        inputs_for(catalog),
        make_clusters(
            index,
            [
                ("g4dn.xlarge", "r8g.2xlarge", 1, 125, 3000),
                ("g4dn.xlarge", "r8g.2xlarge", 2, 125, 3000),
                ("g4dn.xlarge", "r8g.2xlarge", 4, 125, 3000),
                ("g4dn.xlarge", None, 0, 125, 3000),
            ],
        ),
    )
    learner = catalog.instance("g4dn.xlarge").network_baseline_gbps
    memory = catalog.instance("r8g.2xlarge").network_baseline_gbps
    assert list(ev.details["link_gbps"]) == [
        min(learner, memory),
        min(learner, 2 * memory),
        min(learner, 4 * memory),
        0,
    ]
    assert ev.stages["network"][3] == 0.0  # a single machine sends nothing
    assert ev.stages["network"][0] > ev.stages["network"][1]


@pytest.mark.parametrize("flows", [1, 3, 16])
def test_a_memory_machine_carries_at_most_its_flows_times_the_per_flow_cap(catalog, index, flows):
    """r6in.32xlarge's 200 Gbit/s reach a g6.48xlarge (100) over TCP flows of at most 10 Gbit/s each."""
    clusters = make_clusters(
        index, [("g6.48xlarge", "r6in.32xlarge", 1, 1000, 16000), ("g6.48xlarge", "r6in.32xlarge", 2, 1000, 16000)]
    )
    ev = pipeline.evaluate(inputs_for(catalog, flows=flows), clusters)
    learner = catalog.instance("g6.48xlarge").network_baseline_gbps
    memory = catalog.instance("r6in.32xlarge").network_baseline_gbps
    each = min(memory, (flows + 1) / 2 * FLOW_CAP_GBPS)  # striped: the first flow carries two shares
    assert list(ev.details["link_gbps"]) == [min(learner, each), min(learner, 2 * each)]
    assert ev.detail_at(0)["flow_cap_binds"] == 1.0 and ev.detail_at(0)["flows"] == flows


def test_ena_express_raises_the_per_flow_cap_only_where_both_ends_support_it(catalog, index):
    """p5.48xlarge and r6in.32xlarge support ENA Express, g5.48xlarge does not: asked for, only the
    first pair's flows carry 25 Gbit/s; not asked for, neither's does."""
    assert catalog.instance("p5.48xlarge").ena_express and catalog.instance("r6in.32xlarge").ena_express
    assert not catalog.instance("g5.48xlarge").ena_express
    clusters = make_clusters(
        index,
        [
            ("p5.48xlarge", "r6in.32xlarge", 1, 1000, 16000),
            ("g5.48xlarge", "r6in.32xlarge", 1, 1000, 16000),
            ("p5.48xlarge", None, 0, 1000, 16000),
        ],
    )
    # The memory machines sample, so the link carries the same bytes either way.
    asked = pipeline.evaluate(
        dataclasses.replace(inputs_for(catalog, flows=2, sampling="memory"), ena_express=True), clusters
    )
    plain = pipeline.evaluate(inputs_for(catalog, flows=2, sampling="memory"), clusters)
    assert list(asked.details["ena_express"]) == [True, False, False]  # one machine has no link to speed up
    assert list(plain.details["ena_express"]) == [False, False, False]
    assert asked.details["link_gbps"][0] == 1.5 * ENA_EXPRESS_FLOW_CAP_GBPS  # two striped flows
    assert plain.details["link_gbps"][0] == asked.details["link_gbps"][1] == 1.5 * FLOW_CAP_GBPS
    assert asked.stages["network"][0] == pytest.approx(plain.stages["network"][0] * FLOW_CAP_GBPS / 25)
    assert asked.stages["network"][1] == plain.stages["network"][1]
    np.testing.assert_array_equal(asked.hourly_usd, plain.hourly_usd)  # AWS charges nothing for it


def test_the_testbed_prices_no_per_flow_cap(catalog, index):
    clusters = make_clusters(index, [("g6.48xlarge", "r6in.32xlarge", 1, 1000, 16000)])
    ev = pipeline.evaluate(dataclasses.replace(inputs_for(catalog), flow_cap_gbps=math.inf), clusters)
    assert ev.details["link_gbps"][0] == min(
        catalog.instance("g6.48xlarge").network_baseline_gbps, catalog.instance("r6in.32xlarge").network_baseline_gbps
    )
    assert ev.detail_at(0)["flow_cap_binds"] == 0.0


def test_sharding_over_k_machines_adds_their_caches(catalog, index):
    ev = pipeline.evaluate(
        inputs_for(catalog), make_clusters(index, [("g4dn.xlarge", "r8g.xlarge", k, 125, 3000) for k in (1, 2, 3, 4)])
    )
    assert np.all(np.diff(ev.details["cache_fraction"]) > 0)
    assert np.all(np.diff(ev.stages["cpu"]) < 0)


def test_structure_that_does_not_fit_is_infeasible(catalog, index):
    ev = pipeline.evaluate(
        inputs_for(catalog),
        make_clusters(
            index,
            [
                ("g4dn.xlarge", "r8g.large", 1, 125, 3000),  # 16 GiB < 4 GiB reserve + 14.7 GB structure
                ("g4dn.xlarge", "r8g.xlarge", 1, 125, 3000),
            ],
        ),
    )
    assert list(ev.infeasible) == [Unrunnable.STRUCTURE_EXCEEDS_RAM, FEASIBLE]
    assert not ev.feasible[0] and ev.feasible[1]


def test_gpu_missing_from_the_gpu_table_cannot_learn(catalog, index):
    table = {k: v for k, v in DEFAULT_COEFFICIENTS.gpu_tflops.items() if k != "T4"}
    no_t4 = inputs_for(catalog, coefficients=DEFAULT_COEFFICIENTS.model_copy(update={"gpu_tflops": table}))
    clusters = make_clusters(
        index, [("g4dn.xlarge", "r8g.2xlarge", 1, 125, 3000), ("g5.xlarge", "r8g.2xlarge", 1, 125, 3000)]
    )
    assert list(pipeline.evaluate(no_t4, clusters).infeasible) == [Unrunnable.UNSUPPORTED_GPU, FEASIBLE]


def test_gpu_memory_bounds_the_batch(catalog, index):
    huge = inputs_for(catalog, batch_size=200_000, fanouts=[25, 25, 25])
    ev = pipeline.evaluate(huge, make_clusters(index, [("g4dn.xlarge", "r8g.4xlarge", 1, 125, 3000)]))
    assert ev.infeasible[0] == Unrunnable.BATCH_EXCEEDS_GPU


def test_a_cluster_failing_two_checks_gets_the_earlier_reason(catalog, index):
    # Structure too big for r8g.large and a batch too big for the T4: the enum lists RAM first.
    huge = inputs_for(catalog, batch_size=200_000, fanouts=[25, 25, 25])
    ev = pipeline.evaluate(huge, make_clusters(index, [("g4dn.xlarge", "r8g.large", 1, 125, 3000)]))
    assert ev.infeasible[0] == Unrunnable.STRUCTURE_EXCEEDS_RAM


def test_reason_precedence_is_the_enum_order_not_the_order_a_model_lists_its_checks():
    fails = np.array([True, False])
    reasons = list(Unrunnable)
    for earlier, later in itertools.pairwise(reasons):
        codes = first_unrunnable({later: fails, earlier: fails})  # listed later-first on purpose
        assert list(codes) == [earlier, FEASIBLE]
    assert all(reason.description for reason in reasons)


def test_faster_gpu_shortens_the_gpu_stage(catalog, index):
    ev = pipeline.evaluate(
        inputs_for(catalog),
        make_clusters(
            index, [("g4dn.xlarge", "r8g.4xlarge", 1, 125, 3000), ("g6e.xlarge", "r8g.4xlarge", 1, 125, 3000)]
        ),
    )
    assert ev.stages["gpu"][1] < ev.stages["gpu"][0]


def test_coefficients_override_changes_exactly_their_stage(catalog, index, tmp_path):
    clusters = make_clusters(index, [("g4dn.xlarge", "r8g.4xlarge", 1, 125, 3000)])
    base = pipeline.evaluate(inputs_for(catalog), clusters)
    path = tmp_path / "calibration.json"
    path.write_text(
        Coefficients(network_efficiency=DEFAULT_COEFFICIENTS.network_efficiency / 2, source="test").model_dump_json()
    )
    slow = pipeline.evaluate(inputs_for(catalog, coefficients=load_coefficients(path)), clusters)
    assert slow.stages["network"][0] == pytest.approx(2 * base.stages["network"][0])
    assert slow.stages["gpu"][0] == pytest.approx(base.stages["gpu"][0])


def test_calibration_state_is_a_field_and_defaults_are_uncalibrated():
    assert DEFAULT_COEFFICIENTS.calibrated is False
    shipped = load_coefficients(Path(__file__).resolve().parents[3] / "pricing_data" / "calibration-testbed.json")
    assert shipped.calibrated is True


@pytest.mark.parametrize(
    ("source", "calibrated"),
    [
        ("planner calibrate 2026-11-20T23:48:48Z on vm: 6 testbed run(s)", True),
        (DEFAULT_COEFFICIENTS.source, False),
    ],
)
def test_a_calibration_file_from_before_the_field_still_loads(tmp_path, source, calibrated):
    path = tmp_path / "old.json"
    document = Coefficients(volume_efficiency=0.45, source=source).model_dump(mode="json")
    del document["calibrated"]  # written before the field existed
    path.write_text(json.dumps(document))
    loaded = load_coefficients(path)
    assert loaded.calibrated is calibrated and loaded.volume_efficiency == 0.45


def test_a_file_that_says_calibrated_is_taken_at_its_word(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(Coefficients(source="hand-tuned", calibrated=False).model_dump_json())
    assert load_coefficients(path).calibrated is False


def test_bad_calibration_file_names_the_field(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"network_efficiency": 3}')
    with pytest.raises(InputFileError, match="network_efficiency"):
        load_coefficients(path)


def test_cost_is_hourly_price_times_total_time(catalog, index):
    ev = pipeline.evaluate(
        inputs_for(catalog, epochs=7), make_clusters(index, [("g4dn.xlarge", "r8g.4xlarge", 2, 250, 6000)])
    )
    gp3 = catalog.volumes["gp3"]
    hourly = (
        0.526
        + 2 * catalog.instance("r8g.4xlarge").ondemand_usd_per_hour
        + 2 * gp3.hourly_usd(ev.volume_gb[0], 6000, 250)
    )
    assert ev.hourly_usd[0] == pytest.approx(hourly)
    assert ev.total_hours[0] == pytest.approx((ev.startup_s[0] + 7 * ev.epoch_s[0]) / 3600)
    assert ev.total_usd[0] == pytest.approx(ev.total_hours[0] * hourly)


def test_a_cache_fill_reads_every_read_ahead_window_that_holds_one_of_its_rows(catalog, index):
    """Start-up reads whole 128 KiB windows. With rows dealt modulo, papers100M's 512-byte rows put
    256 in a window, so a memory cache of a quarter of the rows, or half of them per machine over
    two, reads the whole file either way; rows of a whole window each are read exactly, so two
    machines halve it."""
    one_and_two = make_clusters(
        index, [("g4dn.xlarge", "r8g.xlarge", 1, 1000, 16000), ("g4dn.xlarge", "r8g.xlarge", 2, 1000, 16000)]
    )
    narrow = pipeline.evaluate(inputs_for(catalog, learner_cache="none", shard_layout="modulo"), one_and_two)
    union = narrow.details["union_fraction"]
    assert 0.1 < union[0] < 0.5 and union[1] == pytest.approx(2 * union[0])
    assert narrow.startup_s[1] == pytest.approx(narrow.startup_s[0], rel=1e-9)
    nodes = 200_000
    wide = _uniform("wide", nodes, nodes * 10).model_copy(
        update={"feature_dim": READAHEAD_BYTES // 4, "cache_curves": {"degree": [(0.1, 0.5), (1.0, 1.0)]}}
    )
    ev = pipeline.evaluate(inputs_for(catalog, profile=wide, learner_cache="none", shard_layout="modulo"), one_and_two)
    read = ev.details["startup_read_gb"] * 1e9
    reading = ev.startup_s - ev.details["startup_fixed_s"]  # both read at one rate: time is as the bytes
    assert reading[1] / reading[0] == pytest.approx(read[1] / read[0])
    held = ev.details["union_fraction"] * wide.feature_bytes / np.array([1, 2])
    assert ev.details["union_fraction"][0] == 1.0 and read - wide.structure_bytes == pytest.approx(held)


def _uniform(name: str, nodes: int, edges: int) -> DatasetProfile:
    return DatasetProfile(
        name=name,
        num_nodes=nodes,
        num_edges=edges,
        feature_rows=nodes,
        feature_dim=8,
        num_train=nodes,
        structure_bytes=csr_csc_bytes(nodes, edges, 4),
        cache_curves={"degree": [(0.5, 0.5)]},
    )


def test_batch_on_a_huge_uniform_graph_is_the_fanout_product():
    b = estimate_batch(_uniform("u", 10**11, 10**13), Workload(fanouts=[15, 10, 5], batch_size=1024))
    assert b.edges_per_hop == pytest.approx((1024 * 15, 1024 * 150, 1024 * 750), rel=1e-5)
    assert b.nodes == pytest.approx(1024 * (1 + 15 + 150 + 750), rel=1e-3)


def test_batch_dedups_like_drawing_with_replacement_on_a_small_uniform_graph():
    n = 50_000
    b = estimate_batch(_uniform("u", n, n * 20), Workload(fanouts=[10], batch_size=1000))
    drawn = 1000 + 1000 * 10
    assert b.nodes == pytest.approx(n * (1 - np.exp(-drawn / n)), rel=1e-6)


def test_skewed_graph_batches_touch_fewer_distinct_nodes():
    uniform = _uniform("u", 1_000_000, 20_000_000)
    skewed = uniform.model_copy(update={"cache_curves": {"degree": [(0.01, 0.5), (0.1, 0.9)]}})
    w = Workload()
    assert estimate_batch(skewed, w).nodes < 0.7 * estimate_batch(uniform, w).nodes


def test_fanout_minus_one_takes_every_neighbour():
    b = estimate_batch(_uniform("u", 10**11, 3 * 10**11), Workload(fanouts=[-1], batch_size=100))
    assert b.edges_per_hop == pytest.approx((300,))
