"""The full-graph model: standard distributed training and RETEXO over a partitioned graph.

A cluster is n identical GPU-less workers, each holding 1/n of the nodes (its partition, with the
edges into them and the rows of the remote neighbours it reads: its halo) on its own gp3 volume
and in RAM; the master that averages gradients runs on worker 0. Every round is a full-batch
pass over each partition, and its stages run one after another (each waits for the exchange
before it), so a round takes their sum:

- compute: the forward pass, the validation forward pass that picks the best round and the
  backward pass (to the weights, and to the input only where the input is trained: never in
  RETEXO, whose layers train on frozen inputs, so its GCN and GraphSAGE validation passes reuse
  the input's neighbour aggregate), dense products and edge-wise aggregation at separate
  per-vCPU rates;
- exchange: boundary rows to and from the other workers (each worker sends its share of the B
  halo rows, B/n, and receives as many), over the worker's link;
- aggregation: the n - 1 other workers' gradients into worker 0 and the weights back out,
  through worker 0's link;
- latency: one message latency per exchange and per aggregation step, by where the workers are.

What runs per round is each procedure's schedule (the RETEXO paper, Appendix A.1):

    standard  R rounds of all K layers: per hidden layer a forward, a backward and a validation
              exchange of boundary representations; gradients of every layer averaged
    retexo    for each layer k, R rounds of layer k and its temporary classifier, no exchange;
              gradients of that layer and its classifier averaged

plus, once, the exchange of the input features' boundary rows (both) and of each frozen hidden
layer's (RETEXO), counted in start-up with loading the partitions. Data transfer is charged per
GB moved at the snapshot's price for where the workers are: free in one AZ, both directions across
AZs, the sender's side between regions and to the internet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from contracts.datavolume import VolumeInputs
from contracts.layerwidths import layer_dims
from contracts.plan import Unrunnable
from contracts.profile import DTYPE_BYTES, DatasetProfile
from contracts.workload import PARTITIONED_METHODS, FullGraphJob
from foundation.units import FLOAT32_BYTES
from planner.costmodel.evaluation import Clusters, Details, Evaluation, ModelInputs
from planner.costmodel.gnn import (
    Work,
    cached_forward,
    classifier_forward,
    classifier_parameters,
    layer_forward,
    layer_parameters,
    model_parameters,
    round_work,
)
from planner.costmodel.workers import Workers

STANDARD_EXCHANGES_PER_HIDDEN_LAYER: Final = 3  # forward, backward, validation forward
AGGREGATION_MESSAGES: Final = 2  # gradients up, weights down
# Activations kept per inner row and layer while training: the output, the pre-activation, its
# gradient and the dropout mask; per halo row and layer, the row received and its gradient.
ACTIVATION_COPIES: Final = 4
HALO_COPIES: Final = 2


def boundary_rows_random(profile: DatasetProfile, workers: np.ndarray) -> np.ndarray:
    """Expected halo rows summed over ``workers`` parts when nodes are dealt at random.

    A node with d neighbours is a halo row of every other part that holds at least one of them:
    (n - 1)(1 - (1 - 1/n)^d) parts in expectation. Summed over the in-degree histogram when the
    profile has one (`remotegnn profile`), else over the mean degree (a little high: the
    expression is concave in d). Directed graphs count in-degree for out-degree.
    """
    n = np.asarray(workers, dtype=float)[..., None]
    if profile.in_degree is not None:
        counts = np.asarray(profile.in_degree.counts, dtype=float)
        degrees = np.asarray(profile.in_degree.means, dtype=float)
    else:
        counts, degrees = np.array([profile.num_nodes], dtype=float), np.array([profile.avg_degree])
    return np.sum(counts * (n - 1) * (1 - (1 - 1 / n) ** degrees), axis=-1)


def boundary_rows(profile: DatasetProfile, job: FullGraphJob, workers: np.ndarray) -> np.ndarray:
    """The job's halo rows on ``workers`` parts: measured when the job gives them, else a random placement's."""
    if job.boundary_rows is not None:
        return np.full(np.shape(workers), float(job.boundary_rows))
    return boundary_rows_random(profile, workers)


@dataclass(frozen=True)
class Phase:
    """Rounds that repeat the same work: a procedure is a list of them."""

    rounds: int
    work: Work  # per worker, per round, forward and backward and validation
    exchange_widths: list[int]  # row widths exchanged with the other workers per round
    parameters: int  # parameters averaged per round
    once_widths: list[int]  # row widths exchanged once, before the phase

    @property
    def messages(self) -> int:
        return len(self.exchange_widths) + AGGREGATION_MESSAGES


def schedule(inputs: ModelInputs, inner: np.ndarray, halo: np.ndarray, edges: np.ndarray) -> list[Phase]:
    """The method's rounds, their work on a worker of ``inner`` nodes, ``halo`` remote rows and ``edges``."""
    job, gnn = inputs.job, inputs.job.gnn
    dims = model_dims(inputs)
    last = len(dims) - 2
    forward = [
        layer_forward(gnn, dims[m], dims[m + 1], job.heads, m == last, inner=inner, halo=halo, edges=edges)
        for m in range(len(dims) - 1)
    ]
    if inputs.method == "standard":
        work = round_work(gnn, forward[0], input_gradient=False)  # the features are not trained
        for layer in forward[1:]:
            work = work + round_work(gnn, layer, input_gradient=True)
        return [
            Phase(
                rounds=job.rounds,
                work=work,
                exchange_widths=[d for d in dims[1:-1] for _ in range(STANDARD_EXCHANGES_PER_HIDDEN_LAYER)],
                parameters=model_parameters(gnn, dims, job.heads),
                once_widths=[dims[0]],
            )
        ]
    classifiers = classifier_parameters(dims)
    phases = []
    for m in range(last + 1):
        # The layer's input is frozen (features, or the layer below, trained already), so the
        # validation pass reuses its neighbour aggregate (the default in remotegnn's RETEXO).
        validation = cached_forward(gnn, dims[m], dims[m + 1], inner=inner)
        work = round_work(gnn, forward[m], input_gradient=False, validation=validation)
        parameters = layer_parameters(gnn, dims[m], dims[m + 1], job.heads, m == last)
        if m < last:  # a hidden layer trains with its temporary classifier, whose gradient reaches the layer
            work = work + round_work(gnn, classifier_forward(dims[m + 1], dims[-1], inner), input_gradient=True)
            parameters += classifiers[m]
        phases.append(Phase(job.rounds, work, [], parameters, once_widths=[dims[m]]))
    return phases


def model_dims(inputs: ModelInputs) -> list[int]:
    profile, job = inputs.profile, inputs.job
    return layer_dims(profile.feature_dim, inputs.workload.hidden_dim, classes(inputs), job.layers)


def volume_inputs(inputs: ModelInputs, workers: int, boundary_rows: int) -> VolumeInputs:
    """Eq. 2's terms for the job's model on ``workers`` workers with ``boundary_rows`` halo rows."""
    dims, job = model_dims(inputs), inputs.job
    return VolumeInputs(
        workers=workers,
        boundary_rows=boundary_rows,
        feature_bytes=dims[0] * FLOAT32_BYTES,
        hidden_bytes=[w * FLOAT32_BYTES for w in dims[1:-1]],
        model_bytes=model_parameters(job.gnn, dims, job.heads) * FLOAT32_BYTES,
        classifier_bytes=[p * FLOAT32_BYTES for p in classifier_parameters(dims)],
        rounds=job.rounds,
    )


def classes(inputs: ModelInputs) -> int:
    """The job's classes, else the profile's (the request checks that one of them is there)."""
    value = inputs.job.classes or inputs.profile.num_classes
    assert value is not None, "the request names the classes or its profile does"
    return value


def training_ram_bytes(
    inputs: ModelInputs, n: np.ndarray, inner: np.ndarray, halo: np.ndarray, edges: np.ndarray
) -> np.ndarray:
    """What a worker holds while training: its share of the structure, its inner and halo rows'
    features in float32, the activations of every layer, and GAT's attention per edge."""
    profile, job = inputs.profile, inputs.job
    activations = (inner * ACTIVATION_COPIES + halo * HALO_COPIES) * sum(model_dims(inputs)[1:]) * FLOAT32_BYTES
    attention = edges * job.heads * FLOAT32_BYTES * ACTIVATION_COPIES if job.gnn == "gat" else 0.0
    return profile.structure_bytes / n + (inner + halo) * profile.feature_dim * FLOAT32_BYTES + activations + attention


def evaluate(inputs: ModelInputs, clusters: Clusters) -> Evaluation:
    assert inputs.method in PARTITIONED_METHODS, "this model prices the procedures over a partition of the nodes"
    profile, job = inputs.profile, inputs.job
    workers = Workers.of(inputs, clusters)
    n, placement, link_bytes_s = workers.n, workers.placement, workers.link_bytes_s
    boundary = boundary_rows(profile, job, n)
    inner, halo, edges = profile.num_nodes / n, boundary / n, profile.num_edges / n

    phases = schedule(inputs, inner, halo, edges)
    rounds = sum(p.rounds for p in phases)
    compute = sum(p.rounds * workers.compute_s(p.work) for p in phases)
    exchanged = sum(p.rounds * sum(p.exchange_widths) for p in phases) * FLOAT32_BYTES  # bytes of a row, all rounds
    exchange_bytes = halo * exchanged  # one worker's, each way
    aggregated = sum(p.rounds * p.parameters for p in phases) * FLOAT32_BYTES  # one worker's, all rounds
    messages = sum(p.rounds * p.messages for p in phases)
    once_widths = sum(sum(p.once_widths) for p in phases)
    once_messages = sum(len(p.once_widths) for p in phases)

    stages = {
        "compute": compute / rounds,
        "exchange": exchange_bytes / link_bytes_s / rounds,
        "aggregation": (n - 1) * aggregated / link_bytes_s / rounds,
        "latency": np.full_like(n, messages * placement.latency_s / rounds),
    }
    # Bytes that cross the network, each counted once: every halo row of every exchange, every
    # other worker's gradients up and weights down.
    sent_per_round = (boundary * exchanged + 2 * (n - 1) * aggregated) / rounds
    sent_once = boundary * once_widths * FLOAT32_BYTES

    feature_bytes = DTYPE_BYTES[profile.feature_dtype]
    stored = profile.structure_bytes / n + (inner + halo) * profile.feature_dim * feature_bytes
    storage = workers.storage(stored)
    startup = storage.load_s + halo * once_widths * FLOAT32_BYTES / link_bytes_s + once_messages * placement.latency_s
    in_ram = training_ram_bytes(inputs, n, inner, halo, edges)
    details = Details(
        stored={
            "boundary_rows": boundary,
            "inner_nodes": inner,
            "halo_rows": halo,
            "worker_edges": edges,
            "link_gbps": workers.link_gbps,
            "peer_gb": (boundary * exchanged + sent_once) / 1e9,
            "aggregation_gb": 2 * (n - 1) * aggregated / 1e9,
            "transfer_gb_per_round": sent_per_round / 1e9,
            "exchange_gb_per_round": exchange_bytes / rounds / 1e9,
            "aggregated_mb_per_round": np.full_like(n, aggregated / rounds / 1e6),
            "messages_per_round": np.full_like(n, messages / rounds),
            "latency_ms": np.full_like(n, placement.latency_s * 1e3),
            "rounds": np.full_like(n, rounds),
            "usd_per_gb": np.full_like(n, workers.usd_per_gb),
        },
        derived={"transfer_gb": lambda d: d["peer_gb"] + d["aggregation_gb"]},
    )
    ev = Evaluation(
        model=inputs.method,
        stages=stages,
        startup_s=startup,
        hourly_usd=storage.hourly_usd,
        volume_gb=storage.size_gb,
        infeasible=workers.unrunnable(storage, in_ram, Unrunnable.PARTITION_EXCEEDS_RAM),
        epochs=rounds,
        details=details,
        overlapped=False,
        usd_per_epoch_extra=sent_per_round / 1e9 * workers.usd_per_gb,
        usd_fixed_extra=sent_once / 1e9 * workers.usd_per_gb,
    )
    return workers.on_market(ev, storage)
