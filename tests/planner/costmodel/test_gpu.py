"""The GPU step's work (planner.costmodel.gpu) against PyG's own GraphSAGE, and its seconds."""

from __future__ import annotations

import math

import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from planner.costmodel.gpu import StepWork, step_work

NODES, EDGES = (512.0, 4000.0, 20000.0), (5000.0, 30000.0)


def test_the_dense_work_is_the_layers_weights_applied_to_every_row():
    torch_geometric = pytest.importorskip("torch_geometric")
    # Products only (no edges): per node, 2 FLOPs per weight of each layer; training is forward,
    # weight gradients, and the input gradient above the first layer.
    model = torch_geometric.nn.GraphSAGE(64, 32, num_layers=2, out_channels=7)
    weights = [sum(p.numel() for name, p in conv.named_parameters() if name.endswith("weight")) for conv in model.convs]
    nodes = sum(NODES)
    expected = 2 * nodes * (2 * weights[0] + 3 * weights[1])
    work = step_work(NODES, (0.0, 0.0), 64, 32, 7, form="whole")
    assert work.flops == pytest.approx(expected)


def test_trimming_drops_the_last_hops_from_the_later_layers():
    whole = step_work(NODES, EDGES, 128, 256, 16, form="whole")
    trimmed = step_work(NODES, EDGES, 128, 256, 16, form="trimmed")
    # The first layer runs on the whole batch (forward and weight gradients); the second (last)
    # on the seeds and hop 1 only, over hop 1's edges (forward and both gradients).
    first = 2 * (2 * 2 * sum(NODES) * 128 * 256) + 2 * sum(EDGES) * 128
    kept_nodes, kept_edges = NODES[0] + NODES[1], EDGES[0]
    second = 3 * (2 * 2 * kept_nodes * 256 * 16) + 2 * (2 * kept_edges * 256)
    assert trimmed.flops == pytest.approx(first + second)
    assert trimmed.flops < whole.flops and trimmed.memory_bytes < whole.memory_bytes
    one_hop = (NODES[:2], EDGES[:1])  # one layer: nothing to trim
    assert step_work(*one_hop, 128, 64, 8, form="trimmed") == step_work(*one_hop, 128, 64, 8, form="whole")


def test_blocks_compute_only_the_rows_the_next_layer_reads():
    trimmed = step_work(NODES, EDGES, 128, 256, 16, form="trimmed")
    blocks = step_work(NODES, EDGES, 128, 256, 16, form="blocks")
    # The first layer's products on the seeds and hop 1 (what the second reads), its aggregation
    # over every edge; the second's on the seeds alone, over hop 1's edges.
    first = 2 * (2 * 2 * (NODES[0] + NODES[1]) * 128 * 256) + 2 * sum(EDGES) * 128
    second = 3 * (2 * 2 * NODES[0] * 256 * 16) + 2 * (2 * EDGES[0] * 256)
    assert blocks.flops == pytest.approx(first + second)
    assert blocks.flops < trimmed.flops / 5 and blocks.activation_bytes < trimmed.activation_bytes


def test_the_seconds_add_compute_memory_and_overhead():
    co = DEFAULT_COEFFICIENTS
    work = StepWork(flops=2e12, memory_bytes=3e9, activation_bytes=0.0)
    seconds = work.seconds(co, 10.0, 100.0)
    expected = 2e12 / (10e12 * co.gpu_efficiency) + 3e9 / (100e9 * co.gpu_memory_efficiency) + co.gpu_step_overhead_s
    assert seconds == pytest.approx(expected)
    # A learner without a bandwidth (the testbed's CPU) pays for FLOPs alone.
    flops_only = work.seconds(co, 10.0, math.inf)
    assert flops_only == pytest.approx(2e12 / (10e12 * co.gpu_efficiency) + co.gpu_step_overhead_s)
