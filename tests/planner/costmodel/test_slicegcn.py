"""The SliceGCN model against its figures worked out by hand on a small graph, and its answers."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import PlanRequest, Unrunnable
from contracts.profile import DatasetProfile
from foundation.units import GIB
from planner.catalog.snapshot import load_catalog
from planner.costmodel.evaluation import Clusters
from planner.solver.recommend import recommend
from planner.solver.solution import Solution

# A graph small enough to price by hand: 1,000 nodes, 8,000 edges, 10 features, 300 training nodes.
NODES, EDGES, DIM, TRAIN, STRUCTURE = 1_000, 8_000, 10, 300, 100_000
HIDDEN, LAYERS, ROUNDS = 16, 2, 5
WORKER = "r6i.large"  # 2 vCPUs

SMALL = DatasetProfile(
    name="small",
    num_nodes=NODES,
    num_edges=EDGES,
    feature_rows=NODES,
    feature_dim=DIM,
    num_train=TRAIN,
    num_classes=4,
    structure_bytes=STRUCTURE,
    cache_curves={"degree": [(0.5, 0.5)]},
)


def small_request(**full_graph) -> PlanRequest:
    return PlanRequest(
        profile=SMALL,
        method="slicegcn",
        workload={"hidden_dim": HIDDEN},
        full_graph={"layers": LAYERS, "rounds": ROUNDS, **full_graph},
    )


def priced(request: PlanRequest, worker: str, counts: list[int]) -> Solution:
    """The request priced on clusters of ``counts`` workers of one type (the grid's own code path)."""
    catalog = load_catalog()
    index = next(i for i, t in enumerate(catalog.columns.instances) if t.name == worker)
    types = np.full(len(counts), index)
    clusters = Clusters(types, types, np.array(counts), np.full(len(counts), 125.0), np.full(len(counts), 3000.0))
    return Solution(request, catalog, DEFAULT_COEFFICIENTS, clusters)


def test_three_workers_bytes_ram_and_time_are_those_worked_out_by_hand():
    sol = priced(small_request(), WORKER, [3])
    d = sol.ev.detail_at(0)
    # Slices of 3 workers: ceil(10/3) = 4 feature columns, ceil(16/3) = 6 hidden columns each.
    assert (d["slice_columns"], d["slice_width"]) == (4, 6)
    # Per worker and epoch: 300 training rows of 6 float32 out and their gradients back (7,200 bytes
    # each way), and 700 evaluation rows out (16,800): 31,200 bytes. Worker 0 shares the master's
    # machine, so 2 x 31,200 cross the network each epoch, 5 epochs in all.
    assert d["worker_gb_per_round"] * 1e9 == pytest.approx(31_200)
    assert d["transfer_gb_per_round"] * 1e9 == pytest.approx(62_400)
    assert d["transfer_gb"] * 1e9 == pytest.approx(312_000)
    # RAM: the structure (100,000), the slice (1,000 x 4 x 4 = 16,000) and the activations
    # (3 copies x 2 layers x 1,000 nodes x 6 columns x 4 bytes = 144,000).
    assert d["ram_gib"] * GIB == pytest.approx(260_000)
    # CPU per epoch: dense, two products per layer of 1,000 x in x 6 multiply-adds (in = 4, then 6),
    # 2 x 2 x 1,000 x (4 x 6 + 6 x 6) = 240,000 FLOP; sparse, 8,000 edges x 6 columns x 2 layers,
    # 2 x 96,000 = 192,000 FLOP; both four times (forward, backward to weights and input, scoring).
    vcpus = load_catalog().instance(WORKER).vcpus
    dense_s = 4 * 240_000 / (vcpus * DEFAULT_COEFFICIENTS.cpu_dense_gflops_per_vcpu * 1e9)
    sparse_s = 4 * 192_000 / (vcpus * DEFAULT_COEFFICIENTS.cpu_sparse_gflops_per_vcpu * 1e9)
    assert sol.ev.stages["compute"][0] == pytest.approx(dense_s + sparse_s)
    assert sol.ev.stages["network"][0] == pytest.approx(62_400 / (d["link_gbps"] * 1e9 / 8))
    assert sol.ev.epochs == ROUNDS  # a round is an epoch, as for standard training


def test_ram_per_worker_falls_with_the_workers_but_never_below_the_structure():
    request = PlanRequest(dataset="papers100M", method="slicegcn")
    counts = list(range(2, 17))
    sol = priced(request, "r8g.16xlarge", counts)
    ram = np.array([sol.ev.detail_at(i)["ram_gib"] for i in range(len(counts))])
    assert np.all(np.diff(ram) < 0)
    assert np.all(ram * GIB > sol.inputs.profile.structure_bytes)  # every worker holds the whole graph


def test_feature_fusion_adds_exactly_the_fused_slices_traffic():
    plain = priced(small_request(), WORKER, [3]).ev
    fused = priced(small_request(feature_fusion=True), WORKER, [3]).ev
    # Each of the 2 workers off the master's machine gets its fused slice (1,000 x 4 float32 =
    # 16,000 bytes), sends its gradient back (16,000) and gets the slice again for the scoring
    # pass (16,000): 96,000 more bytes an epoch.
    extra = fused.detail_at(0)["transfer_gb_per_round"] - plain.detail_at(0)["transfer_gb_per_round"]
    assert extra * 1e9 == pytest.approx(96_000)
    assert fused.stages["compute"][0] == pytest.approx(plain.stages["compute"][0])
    assert fused.detail_at(0)["messages_per_round"] == plain.detail_at(0)["messages_per_round"] + 3


@pytest.mark.parametrize(("where", "usd_per_gb"), [("zone", 0.0), ("zones", 0.02), ("internet", 0.09)])
def test_the_transfer_bill_is_the_bytes_moved_at_the_price_where_the_workers_are(where, usd_per_gb):
    rec = recommend(PlanRequest(dataset="arxiv", method="slicegcn", full_graph={"workers": 4, "workers_in": where}))
    plan = rec.chosen
    assert plan and plan.full_graph and plan.full_graph.method == "slicegcn"
    path = plan.full_graph
    assert path.rounds == 100 and path.transfer_gb_per_round is not None
    assert path.transfer_gb == pytest.approx(path.transfer_gb_per_round * path.rounds, rel=1e-3)
    assert path.transfer_usd == pytest.approx(path.transfer_gb * usd_per_gb, rel=1e-3, abs=1e-4)
    instances = plan.usd_per_hour * plan.total_hours
    assert plan.total_usd == pytest.approx(instances + path.transfer_usd, rel=1e-3, abs=1e-3)


def test_the_answer_prices_every_procedure_that_trains_a_gcn_beside_it():
    rec = recommend(PlanRequest(dataset="arxiv", method="slicegcn", full_graph={"workers": 2}))
    assert rec.chosen and rec.chosen.full_graph
    assert rec.request.full_graph.gnn == "gcn"  # slicegcn's default model, said in the request
    methods = {m.method: m for m in rec.chosen.full_graph.methods}
    assert set(methods) == {"standard", "retexo", "slicegcn"}
    assert methods["slicegcn"].runnable and methods["slicegcn"].total_usd == pytest.approx(rec.chosen.total_usd)
    assert methods["slicegcn"].rounds == 100 and methods["retexo"].rounds == 200
    # A GraphSAGE job has no SliceGCN to compare with.
    sage = recommend(PlanRequest(dataset="arxiv", method="retexo", full_graph={"workers": 2}))
    assert sage.chosen and sage.chosen.full_graph
    assert {m.method for m in sage.chosen.full_graph.methods} == {"standard", "retexo"}


def test_no_worker_that_cannot_hold_the_graph_and_its_slice_is_chosen():
    """papers100M in 64 GiB machines: 4 workers' slices and activations do not fit beside the
    whole structure, 16 narrower ones do."""

    def request(workers: int) -> PlanRequest:
        return PlanRequest(
            dataset="papers100M", method="slicegcn", full_graph={"workers": workers}, filters={"max_memory_gib": 64}
        )

    few = recommend(request(4))
    assert not few.feasible and few.infeasibility and few.infeasibility.common_reason
    assert few.infeasibility.common_reason.code is Unrunnable.SLICE_EXCEEDS_RAM
    many = recommend(request(16))
    assert many.chosen and many.chosen.memory and many.chosen.memory.count == 16
    assert many.chosen.memory.memory_gib <= 64


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"method": "slicegcn", "full_graph": {"gnn": "sage"}}, "trains a GCN on each feature slice"),
        ({"method": "retexo", "full_graph": {"feature_fusion": True}}, "feature fusion applies to method slicegcn"),
        ({"full_graph": {"feature_fusion": True}}, "feature fusion applies to method slicegcn"),
        ({"method": "slicegcn", "model": "paper"}, "paper model prices sampled training only"),
    ],
)
def test_options_that_do_not_apply_are_refused(fields, message):
    with pytest.raises(ValidationError, match=message):
        PlanRequest(dataset="arxiv", **fields)
