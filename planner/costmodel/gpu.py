"""One mini-batch training step of GraphSAGE on a GPU: its work, and the seconds that work takes.

What is counted is what PyG's ``GraphSAGE`` does on a ``NeighborLoader`` or
``DistributedGraphLoader`` batch, widths [features, hidden, ..., classes], in one of three forms
(``contracts.gpu_steps.StepForm``): blocks (each layer computes only the rows the next one reads,
as the example trains with ``remotegnn.blocks.seed_forward`` and DGL's blocks do; what the
planner prices), trimmed (given the batch's hop counts, PyG's ``trim_to_layer``: layer i skips the last i
hops but still computes a row for every node it reads, about 9x the blocks' arithmetic on a
papers100M batch at fanouts 10,10,10) or whole (every layer on every sampled node and edge:
``model(batch.x, batch.edge_index)``, PyG's default). A layer's forward pass is two dense
products per node and a mean over its edges (``gnn.layer_forward``); training adds the weights'
gradients (the products again) and, above the first layer, the input's gradient (products and
aggregation again).

The seconds are a roofline sum measured on a GPU (benchmarks/gpu_steps.py on an H100: fanouts
[15,10,5] and [10,10,10], batches of 512-4096, hidden 128-512, trimmed and whole): the FLOPs at a
share of the GPU's peak FP32 rate, plus the bytes every pass reads and writes (each layer's input
and output rows, and an input row per edge) at a share of its memory bandwidth, plus a per-step
overhead. That explains every step above 6 ms within 10% (the 3-5 ms ones, launch-bound, within
40%); the FLOPs alone missed by up to 38%. At hidden widths of 128-256 a step is mostly memory
traffic, and the cards the planner picks most (T4, L4) have a tenth of an H100's bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contracts.calibration import Coefficients
from contracts.gpu_steps import StepForm
from contracts.layerwidths import layer_dims
from foundation.units import FLOAT32_BYTES
from planner.costmodel.gnn import Amount, layer_forward


@dataclass(frozen=True)
class StepWork:
    """One training step's work."""

    flops: float  # floating-point operations, dense products and aggregation
    memory_bytes: float  # bytes the passes read and write (rows in and out, one row per edge)
    activation_bytes: float  # one copy of every layer's output rows: what autograd keeps

    def seconds(self, co: Coefficients, tflops: Amount, memory_gbps: Amount) -> Amount:
        """Seconds of the step on a GPU of ``tflops`` peak FP32 and ``memory_gbps`` bandwidth
        (``inf``: a learner whose memory traffic is not priced apart, such as the testbed's CPU)."""
        compute = self.flops / (np.multiply(tflops, 1e12 * co.gpu_efficiency))
        memory = self.memory_bytes / (np.multiply(memory_gbps, 1e9 * co.gpu_memory_efficiency))
        return compute + memory + co.gpu_step_overhead_s


def step_work(
    nodes_per_hop: tuple[float, ...],
    edges_per_hop: tuple[float, ...],
    feature_dim: int,
    hidden: int,
    classes: int,
    *,
    form: StepForm = "trimmed",
) -> StepWork:
    """The work of one step on a batch of this shape (nodes first reached at hops 0..L, edges
    sampled at hops 1..L), one SAGEConv per hop, run in ``form`` (``contracts.gpu_steps.StepForm``).
    Layer i of ``blocks`` and ``trimmed`` reads the nodes up to hop L - i along the edges of hops 1
    to L - i; ``blocks`` computes outputs for the nodes up to hop L - 1 - i only (what the next
    layer reads: the example's ``seed_forward``), ``trimmed`` for every node it reads (PyG's
    ``trim_to_layer``); ``whole`` runs every layer on the whole batch."""
    hops = len(edges_per_hop)
    dims = layer_dims(feature_dim, hidden, classes, hops)
    flops = memory = activations = 0.0
    for layer, (d_in, d_out) in enumerate(zip(dims, dims[1:], strict=False)):
        reach = hops if form == "whole" else hops - layer
        inputs, edges = sum(nodes_per_hop[: reach + 1]), sum(edges_per_hop[:reach])
        outputs = sum(nodes_per_hop[:reach]) if form == "blocks" else inputs
        forward = layer_forward("sage", d_in, d_out, 1, False, inner=outputs, halo=0, edges=edges)
        input_gradient = layer > 0  # the features need no gradient
        gradients = forward.dense + (forward.dense + forward.sparse if input_gradient else 0.0)
        flops += float(forward.dense + forward.sparse + gradients)
        passes = 3 if input_gradient else 2
        memory += passes * FLOAT32_BYTES * (inputs * d_in + outputs * d_out + edges * d_in)
        activations += outputs * d_out * FLOAT32_BYTES
    return StepWork(flops=flops, memory_bytes=memory, activation_bytes=activations)
