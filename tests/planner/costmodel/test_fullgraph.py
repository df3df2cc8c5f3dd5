"""The full-graph model against what RemoteGNN's full-graph trainer really does: the real PyG
modules' parameters, real random partitions' boundary rows, and the bytes a real run sends."""

from __future__ import annotations

import numpy as np
import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.datavolume import data_volume
from contracts.layerwidths import layer_dims
from contracts.plan import PlanRequest
from fullgraph.partitioner import open_partition, write_partition
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.models import build_heads, build_layers, parameter_count
from fullgraph.retexo.training import train_local
from fullgraph.retexo.volume import volume_inputs
from planner.catalog.snapshot import load_catalog
from planner.costmodel.evaluation import Clusters
from planner.costmodel.fullgraph import boundary_rows_random
from planner.costmodel.gnn import (
    cached_forward,
    classifier_parameters,
    layer_forward,
    model_parameters,
    round_work,
)
from planner.solver.recommend import recommend
from planner.solver.solution import Solution
from remotegnn.profile import profile_dataset
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

PEER_KINDS = ("features", "representations", "representation_gradients", "evaluation")
AGGREGATION_KINDS = ("model_gradients", "weights")


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> GraphDataset:
    """A 2,000-node R-MAT graph (skewed degrees), 16 features, 4 classes."""
    path = tmp_path_factory.mktemp("fullgraph") / "rmat"
    synth(
        SynthSpec(nodes=2_000, edges=12_000, dim=16, classes=4, seed=5, train=0.3, val=0.2, test=0.5),
        path,
        progress=False,
    )
    return GraphDataset.open(path)


@pytest.fixture(scope="module")
def profile(graph):
    return profile_dataset(graph, fanouts=(5, 5), batch_size=64).profile


def one_cluster(request: PlanRequest, worker: str, n: int) -> tuple[Solution, dict[str, float]]:
    """The request priced on n workers of one type (the same code the grid goes through)."""
    catalog = load_catalog()
    index = next(i for i, t in enumerate(catalog.columns.instances) if t.name == worker)
    one = np.array([index])
    clusters = Clusters(one, one, np.array([n]), np.array([125.0]), np.array([3000.0]))
    sol = Solution(request, catalog, DEFAULT_COEFFICIENTS, clusters)
    return sol, sol.ev.detail_at(0)


@pytest.mark.parametrize("gnn", ["gcn", "sage", "gat"])
@pytest.mark.parametrize("layers", [1, 2, 3])
def test_parameter_counts_are_those_of_the_real_modules(gnn, layers):
    dims = layer_dims(12, 8, 3, layers)
    assert model_parameters(gnn, dims, heads=2) == parameter_count(build_layers(gnn, dims, 2))
    assert classifier_parameters(dims) == [parameter_count(h) for h in build_heads(dims)]


@pytest.mark.parametrize("workers", [2, 4, 8])
def test_the_random_boundary_estimate_matches_real_random_partitions(graph, profile, tmp_path, workers):
    meta = write_partition(graph, tmp_path / "parts", workers, "random", seed=0)
    estimate = float(boundary_rows_random(profile, np.array([workers]))[0])
    assert estimate == pytest.approx(meta.boundary_rows, rel=0.03)
    # Without the histogram the mean degree stands in, which can only overestimate (the expression is concave).
    coarse = float(boundary_rows_random(profile.model_copy(update={"in_degree": None}), np.array([workers]))[0])
    assert coarse >= estimate


def test_the_random_boundary_estimate_holds_on_cora(shared_datasets, tmp_path):
    from remotegnn.convert import from_planetoid

    from_planetoid(shared_datasets / "planetoid", tmp_path / "cora", name="cora")
    cora = GraphDataset.open(tmp_path / "cora")
    cora_profile = profile_dataset(cora, fanouts=(5, 5), batch_size=64).profile
    for workers in (2, 4):
        meta = write_partition(cora, tmp_path / f"parts{workers}", workers, "random", seed=1)
        estimate = float(boundary_rows_random(cora_profile, np.array([workers]))[0])
        assert estimate == pytest.approx(meta.boundary_rows, rel=0.03)


@pytest.mark.parametrize("method", ["standard", "retexo"])
def test_the_bytes_priced_are_the_bytes_a_real_run_sends(graph, profile, tmp_path, method):
    """Train for real (threads, 3 workers), then price the same job: every byte between workers is
    accounted for, and the gradient traffic is the run's less worker 0's share (the plan's master
    runs on worker 0; the run's is a rank of its own)."""
    meta = write_partition(graph, tmp_path / "parts", 3, "random", seed=2)
    config = TrainConfig(method=method, model="sage", hidden=8, layers=3, rounds=2)
    result = train_local(tmp_path / "parts", config)
    sent = {kind: sum(e.sent for r in result.traffic for e in r.entries if e.kind == kind) for kind in PEER_KINDS}
    aggregation = sum(e.sent for r in result.traffic for e in r.entries if e.kind in AGGREGATION_KINDS)

    request = PlanRequest(
        profile=profile,
        method=method,
        workload={"hidden_dim": 8},
        full_graph={"gnn": "sage", "layers": 3, "rounds": 2, "workers": 3, "boundary_rows": meta.boundary_rows},
    )
    _, d = one_cluster(request, "r6i.large", 3)
    assert d["peer_gb"] * 1e9 == pytest.approx(sum(sent.values()), rel=1e-9)
    assert d["aggregation_gb"] * 1e9 == pytest.approx(aggregation * 2 / 3, rel=1e-9)
    assert d["rounds"] == (2 if method == "standard" else 2 * 3)


def test_the_plans_gamma_is_eq2_on_the_measured_partition(graph, profile, tmp_path):
    meta = write_partition(graph, tmp_path / "parts", 4, "random", seed=3)
    rec = recommend(
        PlanRequest(
            profile=profile,
            method="retexo",
            workload={"hidden_dim": 32},
            full_graph={"gnn": "gcn", "rounds": 50, "workers": 4, "boundary_rows": meta.boundary_rows},
        )
    )
    assert rec.chosen and rec.chosen.full_graph
    expected = data_volume(
        volume_inputs(open_partition(tmp_path / "parts"), "gcn", hidden=32, layers=2, heads=4, rounds=50)
    )
    assert rec.chosen.full_graph.gamma == pytest.approx(expected.gamma, abs=1e-3)
    by_method = {m.method: m for m in rec.chosen.full_graph.methods}
    assert by_method["standard"].data_volume_gb == pytest.approx(expected.standard.total / 1e9, abs=1e-3)
    assert by_method["retexo"].data_volume_gb == pytest.approx(expected.lazy.total / 1e9, abs=1e-3)
    assert rec.chosen.full_graph.boundary_measured and rec.chosen.full_graph.boundary_rows == meta.boundary_rows


@pytest.mark.parametrize(
    ("where", "usd_per_gb"), [("zone", 0.0), ("zones", 0.02), ("regions", 0.02), ("internet", 0.09)]
)
def test_transfer_is_billed_by_where_the_workers_are(where, usd_per_gb):
    rec = recommend(PlanRequest(dataset="arxiv", method="standard", full_graph={"workers": 4, "workers_in": where}))
    plan = rec.chosen
    assert plan and plan.full_graph
    path = plan.full_graph
    assert path.usd_per_gb == pytest.approx(usd_per_gb)
    assert path.transfer_usd == pytest.approx(path.transfer_gb * usd_per_gb, rel=1e-3, abs=1e-4)
    assert path.transfer_gb > 1  # arxiv's boundary rows at hidden 256, 100 rounds
    instances = plan.usd_per_hour * plan.total_hours
    assert plan.total_usd == pytest.approx(instances + path.transfer_usd, rel=1e-3, abs=1e-3)


@pytest.mark.parametrize("gnn", ["gcn", "sage", "gat"])
def test_a_retexo_validation_pass_reuses_the_frozen_aggregate_where_the_trainer_does(gnn):
    # remotegnn's RETEXO caches GCN's and GraphSAGE's neighbour aggregate (not GAT's): their
    # validation pass has no aggregation left, and GCN's products cover the inner rows only.
    forward = layer_forward(gnn, 64, 256, 4, False, inner=1_000, halo=500, edges=10_000)
    cached = cached_forward(gnn, 64, 256, inner=1_000)
    plain = round_work(gnn, forward, input_gradient=False)
    work = round_work(gnn, forward, input_gradient=False, validation=cached)
    if gnn == "gat":
        assert cached is None and work == plain
        return
    assert work.sparse == plain.sparse - forward.sparse
    products = {"sage": forward.dense, "gcn": forward.dense * 1_000 / 1_500}
    assert work.dense == pytest.approx(plain.dense - forward.dense + products[gnn])


def test_a_round_is_the_sum_of_its_stages_and_the_job_its_rounds():
    rec = recommend(PlanRequest(dataset="arxiv", method="retexo", full_graph={"workers": 2, "layers": 3}))
    plan = rec.chosen
    assert plan and plan.full_graph
    assert plan.epoch_seconds == pytest.approx(sum(plan.stages.values()), abs=2e-3)
    assert plan.full_graph.rounds == 300  # 100 rounds for each of 3 layers
    seconds = plan.startup_seconds + plan.full_graph.rounds * plan.epoch_seconds
    assert plan.total_hours * 3600 == pytest.approx(seconds, rel=1e-3)


def test_leaving_the_region_caps_the_link_and_adds_latency():
    def link_and_latency(worker: str, where: str) -> tuple[float, float]:
        request = PlanRequest(dataset="arxiv", method="standard", full_graph={"workers": 2, "workers_in": where})
        sol, d = one_cluster(request, worker, 2)
        return d["link_gbps"], float(sol.ev.stages["latency"][0])

    catalog = load_catalog()
    efficiency = DEFAULT_COEFFICIENTS.network_efficiency
    small, large = catalog.instance("r6in.4xlarge"), catalog.instance("r6in.16xlarge")  # 16 and 64 vCPUs
    assert small.network_baseline_gbps > 5 and large.vcpus >= 32
    zone_link, zone_latency = link_and_latency("r6in.4xlarge", "zone")
    wan_link, wan_latency = link_and_latency("r6in.4xlarge", "regions")
    assert zone_link == pytest.approx(small.network_baseline_gbps * efficiency)
    assert wan_link == pytest.approx(5 * efficiency)
    assert wan_latency > 100 * zone_latency
    assert link_and_latency("r6in.16xlarge", "internet")[0] == pytest.approx(
        large.network_baseline_gbps / 2 * efficiency
    )


def test_across_regions_retexo_is_the_cheaper_procedure_by_its_transfer_bill():
    rec = recommend(PlanRequest(dataset="papers100M", method="retexo", full_graph={"workers_in": "regions"}))
    assert rec.chosen and rec.chosen.full_graph
    path = rec.chosen.full_graph
    standard, retexo = (next(m for m in path.methods if m.method == name) for name in ("standard", "retexo"))
    assert path.gamma > 100
    assert standard.transfer_usd > 50 * retexo.transfer_usd
    assert retexo.total_usd < standard.total_usd
    assert retexo.total_usd == pytest.approx(rec.chosen.total_usd)


def test_no_worker_that_cannot_hold_its_partition_is_chosen():
    """papers100M in 64 GiB machines: 4 workers' partitions (with their training activations) do not
    fit, 16 do; a worker never holds more than its RAM."""

    def request(workers: int) -> PlanRequest:
        return PlanRequest(
            dataset="papers100M",
            method="retexo",
            full_graph={"workers": workers, "boundary_rows": 10_000_000},  # a METIS-like partition
            filters={"max_memory_gib": 64},
        )

    few = recommend(request(4))
    assert not few.feasible and few.infeasibility
    assert few.infeasibility.common_reason and few.infeasibility.common_reason.code == 8  # PARTITION_EXCEEDS_RAM
    assert "full_graph.workers" in {a.field for a in few.infeasibility.advice}
    many = recommend(request(16))
    assert many.feasible and many.chosen and many.chosen.memory
    assert many.chosen.memory.count == 16 and many.chosen.memory.memory_gib <= 64


def test_a_budget_too_small_is_answered_with_the_rounds_that_fit():
    base = recommend(PlanRequest(dataset="arxiv", method="retexo", full_graph={"workers": 2}))
    assert base.chosen
    budget = base.chosen.total_usd / 3
    short = recommend(
        PlanRequest(dataset="arxiv", method="retexo", full_graph={"workers": 2}, constraints={"budget_usd": budget})
    )
    assert not short.feasible and short.infeasibility
    rounds = next(a for a in short.infeasibility.advice if a.field == "full_graph.rounds")
    assert rounds.change == "at_most" and 1 <= rounds.value < 100
    assert "100 rounds per layer" in (short.reason or "")
    fitted = recommend(
        PlanRequest(
            dataset="arxiv",
            method="retexo",
            full_graph={"workers": 2, "rounds": rounds.value},
            constraints={"budget_usd": budget},
        )
    )
    assert fitted.feasible


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        ({"full_graph": {"boundary_rows": 10}}, "give its number of workers too"),
        ({"model": "paper"}, "paper model prices sampled training only"),
        ({"filters": {"gpu_families": ["g5"]}}, "GPU-less workers"),
        ({"full_graph": {"gnn": "gat", "heads": 3}}, "multiple of the heads"),
        ({"full_graph": {"workers": 1}}, "workers"),
        ({"full_graph": {"workers_in": "moon"}}, "workers_in"),
    ],
)
def test_bad_full_graph_requests_are_refused_naming_the_field(request_fields, message):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        PlanRequest(dataset="arxiv", method="retexo", **request_fields)


def test_full_graph_settings_without_a_full_graph_method_are_refused():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="apply to methods standard and retexo"):
        PlanRequest(dataset="arxiv", full_graph={"workers_in": "regions"})
    assert PlanRequest(dataset="arxiv", full_graph={}).method == "sampled"  # the defaults are no setting


def test_an_unlabelled_dataset_needs_its_classes():
    from foundation.errors import UsageError

    with pytest.raises(UsageError, match="full_graph.classes"):
        recommend(PlanRequest(dataset="friendster", method="standard"))
    assert recommend(PlanRequest(dataset="friendster", method="standard", full_graph={"classes": 16})).chosen


def test_the_answer_says_what_is_estimated(tmp_path):
    """Estimated boundary rows and uncalibrated CPU rates are flagged; measured ones are not."""
    estimated = recommend(PlanRequest(dataset="arxiv", method="retexo"))
    assert any("placed at random" in w for w in estimated.warnings)
    assert any("full-graph CPU rates" in w for w in estimated.warnings)
    calibration = tmp_path / "rates.json"
    calibration.write_text(DEFAULT_COEFFICIENTS.model_copy(update={"calibrated": True}).model_dump_json())
    from contracts.calibration import load_coefficients

    measured = recommend(
        PlanRequest(dataset="arxiv", method="retexo", full_graph={"workers": 2, "boundary_rows": 1000}),
        coefficients=load_coefficients(calibration),
    )
    assert not any("placed at random" in w or "CPU rates" in w for w in measured.warnings)
