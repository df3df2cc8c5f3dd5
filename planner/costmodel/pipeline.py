"""The pipeline model (default): an epoch takes as long as the slowest stage of the pipeline.

Stages, per epoch, all running concurrently (RemoteGNN overlaps them):
- volume: feature rows that miss the RAM cache are read from the data machine's volume, one
  I/O per miss at OS-page granularity, bounded by MB/s AND IOPS, each the smaller of the
  instance's EBS baseline and the volume's provisioned figure;
- cpu: sampling (edges per second per vCPU) plus gathering rows into send buffers;
- network: every batch crosses the link, bounded by the smaller of the learner's baseline and
  the memory machines' combined baselines (absent on a single machine);
- gpu: GraphSAGE forward + backward FLOPs at an achieved share of peak, plus a per-step overhead
  and the host-to-device copy.
Plus start-up: loading the structure and the cache from the volume once.

The cache holds what RAM leaves after the structure and a reserve; k memory machines shard the
feature rows, so their caches add up while each keeps a full copy of the structure for sampling.
"""

from __future__ import annotations

import math

import numpy as np

from planner.costmodel.evaluation import GIB, Clusters, Evaluation, ModelInputs, Unrunnable, first_unrunnable

FLOAT_BYTES = 4


def gpu_work(inputs: ModelInputs) -> tuple[float, float]:
    """(FLOPs, GPU bytes) of one training step of an L-layer GraphSAGE on the expected batch.

    Layer i (i = 1 first) computes embeddings for the nodes within L - i hops from the edges of
    hop L - i + 1; each target does two dense products (self and aggregated neighbours).
    """
    batch, workload = inputs.batch, inputs.workload
    hops = len(workload.fanouts)
    flops = 0.0
    activation_bytes = 0.0
    for layer in range(1, hops + 1):
        d_in = inputs.profile.feature_dim if layer == 1 else workload.hidden_dim
        targets = sum(batch.nodes_per_hop[: hops - layer + 1])
        edges = sum(batch.edges_per_hop[: hops - layer + 1])
        flops += 2 * targets * 2 * d_in * workload.hidden_dim + 2 * edges * d_in
        activation_bytes += targets * workload.hidden_dim * FLOAT_BYTES
    forward_and_backward = 3.0
    gpu_bytes = batch.feature_bytes + 3 * activation_bytes + batch.edges * 16
    return forward_and_backward * flops, gpu_bytes


def evaluate(inputs: ModelInputs, clusters: Clusters) -> Evaluation:
    cols, co, profile, batch = inputs.columns, inputs.coefficients, inputs.profile, inputs.batch
    two = clusters.count > 0
    data = clusters.data_machine
    shards = clusters.data_machines.astype(float)

    # Cache: RAM minus reserve minus structure on each data machine; shards' caches add up.
    reserve_gib = co.os_reserve_gib + np.where(two, 0.0, co.learner_reserve_gib)
    cache_bytes = (cols.memory_gib[data] - reserve_gib) * GIB - profile.structure_bytes
    shard_bytes = profile.feature_bytes / shards
    cached_per_machine = np.clip(cache_bytes, 0.0, shard_bytes)
    cache_fraction = np.minimum(1.0, cached_per_machine * shards / profile.feature_bytes)
    hit_rate = profile.curve(inputs.workload.cache_policy).hit_rate(cache_fraction)

    # Volume: misses per data machine, one I/O each at page granularity.
    reads = batch.batches_per_epoch * batch.nodes
    misses = reads * (1.0 - hit_rate) / shards
    bytes_per_miss = math.ceil(profile.row_bytes / co.page_bytes) * co.page_bytes
    ios_per_miss = math.ceil(profile.row_bytes / co.io_max_bytes)
    volume_bps = np.minimum(cols.ebs_baseline_mbps[data], clusters.volume_mbps) * 1e6 * co.volume_efficiency
    volume_iops = np.minimum(cols.ebs_baseline_iops[data], clusters.volume_iops) * co.volume_efficiency
    with np.errstate(divide="ignore", invalid="ignore"):
        volume_s = np.maximum(misses * bytes_per_miss / volume_bps, misses * ios_per_miss / volume_iops)
    volume_s = np.where(misses > 0, volume_s, 0.0)

    # CPU: sampling and gathering, spread over the data machines' vCPUs.
    per_batch_core_s = batch.edges / co.sample_edges_per_core_s + batch.feature_bytes / (co.gather_gbps_per_core * 1e9)
    cpu_s = batch.batches_per_epoch / shards * per_batch_core_s / cols.vcpus[data]

    # Network: every batch crosses to the learner (two-level only).
    link_gbps = np.minimum(cols.network_baseline_gbps[clusters.learner], shards * cols.network_baseline_gbps[data])
    wire_bytes = batch.batches_per_epoch * batch.wire_bytes
    with np.errstate(divide="ignore"):
        network_s = np.where(two, wire_bytes / (link_gbps * 1e9 / 8 * co.network_efficiency), 0.0)

    # GPU: one GPU of the learner trains.
    flops, gpu_bytes = gpu_work(inputs)
    tflops = inputs.learner_tflops[clusters.learner]
    step_s = (
        flops / (tflops * 1e12 * co.gpu_efficiency)
        + co.gpu_step_overhead_s
        + batch.feature_bytes / (co.pcie_gbps * 1e9)
    )
    gpu_s = batch.batches_per_epoch * step_s

    # Start-up: each data machine loads structure and its cache from its volume, in parallel.
    startup_s = (profile.structure_bytes + cached_per_machine) / volume_bps

    volume_gb = inputs.volume_size_gb(clusters, profile.structure_bytes + shard_bytes)
    price = cols.price(inputs.spot)
    hourly = (
        price[clusters.learner]
        + np.where(two, clusters.count * price[np.maximum(clusters.memory, 0)], 0.0)
        + shards * inputs.volume.hourly_usd(volume_gb, clusters.volume_iops, clusters.volume_mbps)
    )
    gpu_capacity = cols.gpu_memory_gib[clusters.learner] / np.maximum(cols.gpu_count[clusters.learner], 1) * GIB
    infeasible = first_unrunnable(
        {
            Unrunnable.NO_PRICE: ~np.isfinite(hourly),
            Unrunnable.UNSUPPORTED_GPU: ~np.isfinite(tflops),
            Unrunnable.STRUCTURE_EXCEEDS_RAM: cache_bytes < 0,
            Unrunnable.BATCH_EXCEEDS_GPU: gpu_bytes > gpu_capacity * co.gpu_memory_headroom,
            Unrunnable.VOLUME_TOO_LARGE: volume_gb > inputs.volume.max_size_gb,
        }
    )
    return Evaluation(
        model="pipeline",
        stages={"volume": volume_s, "cpu": cpu_s, "network": network_s, "gpu": gpu_s},
        startup_s=startup_s,
        hourly_usd=hourly,
        volume_gb=volume_gb,
        infeasible=infeasible,
        epochs=inputs.workload.epochs,
        details={
            "cache_fraction": cache_fraction,
            "hit_rate": hit_rate,
            "misses_per_machine": misses,
            "volume_mbps_effective": volume_bps / 1e6,
            "volume_iops_effective": volume_iops,
            "link_gbps": np.where(two, link_gbps, 0.0),
            "epoch_wire_gb": np.where(two, wire_bytes / 1e9, 0.0),
        },
    )
