"""The SliceGCN model: full-batch GCN training over column slices of the features.

As "Slicing Input Features to Accelerate Deep Learning: A Case Study with Graph Neural Networks"
trains a graph: p GPU-less workers each hold the whole graph structure and one column slice of
the features (c = ceil(d/p) of every node's d values), and each trains its own L-layer GCN of
width h = ceil(hidden/p) on its slice, full batch over all N nodes, every epoch; a layer is
ReLU(b + Â x W_agg) + x W_self, Â the symmetric-normalised adjacency. The master, on worker 0's
machine as RETEXO's is, concatenates the p outputs, applies the classifier and sends each
worker the gradient of its output.

Workers exchange nothing with each other: what crosses the network is between the master and
the p - 1 other workers (worker 0's share stays on its machine), one phase after another
through worker 0's link. Per epoch and worker:

    forward     its output rows of the training nodes to the master, N_train x h x 4 bytes
    backward    their gradients back, as many bytes
    evaluation  its output rows of the other nodes (validation and test), (N - N_train) x h x 4
    fusion      with feature fusion only: its fused slice from the master, the slice's gradient
                back, and the fused slice again for the scoring pass, 3 x N x c x 4

The evaluation rows come from a second forward pass without dropout (the epoch's score). A profile has no split sizes,
so every node outside the training set counts: an upper bound where most nodes are unlabelled.

An epoch runs its stages one after another, so it lasts their sum:

- compute: per worker and layer, the aggregation along every stored edge (nnz x h multiply-adds)
  and the two products (N x in x h multiply-adds each, in = c for the first layer, h above),
  four times (the training forward pass, the backward pass's gradients to the weights and to the
  input, counted for the first layer too, and the scoring pass), at the partitioned procedures'
  vCPU rates;
- network: the p - 1 other workers' bytes through worker 0's link;
- latency: one message latency per phase.

The master's classifier (its shape is the trainer's) is not priced: it runs on worker 0 beside
that worker's GCN, so where compute leads the epoch is a lower bound. A worker holds the
structure, its slice (at the profile's feature precision) and the activations the backward
pass keeps, beside the OS reserve. A round of the plan is one epoch (``FullGraphJob.rounds``, as
standard training's full-batch rounds); data transfer is billed as for the other full-graph
methods.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from contracts.plan import Unrunnable
from contracts.profile import DTYPE_BYTES, DatasetProfile
from foundation.units import FLOAT32_BYTES, GIB
from planner.costmodel.evaluation import Clusters, Details, Evaluation, ModelInputs
from planner.costmodel.gnn import Amount, Work, classifier_forward, layer_forward
from planner.costmodel.workers import Workers

# The training forward pass, the backward pass's two products (to the weights and to the layer's
# input), and the scoring forward pass without dropout.
PASSES_PER_EPOCH: Final = 4
# Per node, layer and column, kept for the backward pass: the aggregation, the pre-activation and the output.
ACTIVATION_COPIES: Final = 3
OUTPUT_PHASES: Final = 3  # training outputs to the master, their gradients back, evaluation outputs
FUSION_PHASES: Final = 3  # fused slices out to the workers, their gradients back, fused slices for scoring


def slice_widths(feature_dim: int, hidden: int, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A worker's feature columns c = ceil(d/p) and hidden width h = ceil(hidden/p)."""
    return np.ceil(feature_dim / workers), np.ceil(hidden / workers)


def forward_work(layers: int, columns: Amount, width: Amount, nodes: int, edges: int) -> Work:
    """One worker's forward pass: per layer a GCN aggregation and product, and the self product
    (a linear layer's, as a classifier's), over every node and edge."""
    work, d_in = Work(0.0, 0.0), columns
    for _ in range(layers):
        gcn = layer_forward("gcn", d_in, width, heads=1, last=False, inner=nodes, halo=0.0, edges=edges)
        work = work + gcn + classifier_forward(d_in, width, nodes)
        d_in = width
    return work


def bytes_per_worker(profile: DatasetProfile, columns: Amount, width: Amount, fusion: bool) -> Amount:
    """What one worker and the master exchange per epoch, both ways (see the module's table)."""
    rows = 2 * profile.num_train + (profile.num_nodes - profile.num_train)
    fused = FUSION_PHASES * profile.num_nodes * columns * FLOAT32_BYTES if fusion else 0.0
    return rows * width * FLOAT32_BYTES + fused


def stored_bytes(profile: DatasetProfile, columns: Amount) -> Amount:
    """A worker's volume holds the whole structure and its slice, at the profile's precision."""
    return profile.structure_bytes + profile.num_nodes * columns * DTYPE_BYTES[profile.feature_dtype]


def ram_bytes(profile: DatasetProfile, layers: int, columns: Amount, width: Amount) -> Amount:
    """A worker's RAM while training: what its volume holds, and the activations of every layer."""
    activations = ACTIVATION_COPIES * layers * profile.num_nodes * width * FLOAT32_BYTES
    return stored_bytes(profile, columns) + activations


def evaluate(inputs: ModelInputs, clusters: Clusters) -> Evaluation:
    assert inputs.method == "slicegcn", "this model prices SliceGCN"
    profile, job = inputs.profile, inputs.job
    workers = Workers.of(inputs, clusters)
    p, rounds = workers.n, job.rounds
    columns, width = slice_widths(profile.feature_dim, inputs.workload.hidden_dim, p)

    per_worker = np.asarray(bytes_per_worker(profile, columns, width, job.feature_fusion))
    crossing = (p - 1) * per_worker  # per epoch: worker 0 shares the master's machine
    phases = OUTPUT_PHASES + (FUSION_PHASES if job.feature_fusion else 0)
    work = forward_work(job.layers, columns, width, profile.num_nodes, profile.num_edges).scaled(PASSES_PER_EPOCH)
    stages = {
        "compute": workers.compute_s(work),
        "network": crossing / workers.link_bytes_s,
        "latency": np.full_like(p, phases * workers.placement.latency_s),
    }
    storage = workers.storage(np.asarray(stored_bytes(profile, columns)))
    in_ram = np.asarray(ram_bytes(profile, job.layers, columns, width))
    details = Details(
        stored={
            "slice_columns": columns,
            "slice_width": width,
            "worker_gb_per_round": per_worker / 1e9,
            "transfer_gb_per_round": crossing / 1e9,
            "link_gbps": workers.link_gbps,
            "ram_gib": in_ram / GIB,
            "messages_per_round": np.full_like(p, phases),
            "latency_ms": np.full_like(p, workers.placement.latency_s * 1e3),
            "rounds": np.full_like(p, rounds),
            "usd_per_gb": np.full_like(p, workers.usd_per_gb),
            # Eq. 2's convention: a message between a worker and the master counts once, every worker's.
            "data_volume_gb": p * per_worker * rounds / 1e9,
        },
        derived={"transfer_gb": lambda d: d["transfer_gb_per_round"] * d["rounds"]},
    )
    ev = Evaluation(
        model=inputs.method,
        stages=stages,
        startup_s=storage.load_s,
        hourly_usd=storage.hourly_usd,
        volume_gb=storage.size_gb,
        infeasible=workers.unrunnable(storage, in_ram, Unrunnable.SLICE_EXCEEDS_RAM),
        epochs=rounds,
        details=details,
        overlapped=False,
        usd_per_epoch_extra=crossing / 1e9 * workers.usd_per_gb,
    )
    return workers.on_market(ev, storage)
