"""The pipeline model (default): an epoch takes as long as the slowest stage of the pipeline.

Stages, per epoch, all running concurrently (RemoteGNN overlaps them):
- volume: feature rows that miss every RAM cache are read from the data machine's volume, one
  I/O per miss at OS-page granularity, bounded by MB/s AND IOPS, each the smaller of the
  instance's EBS baseline and the volume's provisioned figure;
- cpu: sampling (edges per second per vCPU) plus gathering the rows to send into buffers; where
  the learner samples (``Workload.sampling``, ``planner.costmodel.sampling``), the slower of the
  memory machines' gathering and the learner's sampling;
- network: every batch crosses the link, less the feature rows the learner caches, at the wire
  precision, with its structure as a compact frame, or, where the learner samples, only the ids
  of the rows it asks for (``planner.costmodel.batch``); bounded by the smaller of the learner's
  baseline and the memory machines' combined baselines, each at most ``flows`` x what AWS lets
  one TCP flow carry (absent on a single machine);
- gpu: one GraphSAGE training step per batch, its FLOPs at a share of the GPU's peak and its memory
  traffic at a share of its bandwidth (``planner.costmodel.gpu``), overlapped with the host-to-device
  copy of the rows the GPU's own feature cache misses (``planner.costmodel.device``); the learner's
  GPUs (at most the workload's ``gpus``) train data-parallel, one rank each, so the
  epoch's steps are shared among r ranks at ``data_parallel_efficiency`` each (r > 1). The batch
  size is per rank, so the epoch's batches, and so the CPU's and the link's work, are the same:
  they must just be done r times as fast to keep the GPUs fed. With m learner machines
  (``learner_machines``, two-level only) the ranks are m x r, the learners' price and links m
  times one's, and each memory machine streams to every learner.
Plus start-up: launching the job (``Coefficients.job_start_s``), each data machine choosing its
caches (ranking every node, ``rank_nodes_per_s``), then loading the structure and the caches from
the volume once, in whole read-ahead windows, no faster than one core sweeps them into RAM
(``sweep_gbps``): a machine whose rows are its own part of the file (the striped and range shard
layouts) reads only that part's windows its fill needs; one whose rows are spread over the file
(modulo) reads most of the file (``planner.costmodel.shards``).

Caches: the data machines cache what RAM leaves after the structure and a reserve; k memory
machines shard the feature rows, so their caches add up while each keeps a full copy of the
structure for sampling. The learner of a two-level cluster may cache the hottest rows itself
(``Workload.learner_cache``): those are never sent. Each training GPU may hold the very hottest
(``Workload.gpu_cache_gib``, f_D of the rows, on either layout): those are neither sent nor copied
to the device, so the learner holds f_L = f_D + its RAM's share. Every cache ranks rows by the
workload's policy, so the profile's cache curve H (share of reads served by the top x of rows)
prices each:

    device serves           H(f_D)             (only the other 1 - H(f_D) are copied to the GPU)
    learner serves          H(f_L)
    memory RAM serves       H(f_U) - H(f_L)    f_U = min(1, f_L + f_M)  (memory caches skip the
                                               learner's rows), or max(f_L, f_M) (they repeat them)
    volume serves           1 - H(f_U)
    feature bytes on wire = rows sampled x (1 - H(f_L)) x dim x wire bytes per value

Where the learner samples, its CSC comes out of the RAM its cache may use (f_L shrinks), and the
ids it asks for are rows sampled x (1 - H(f_L)) x ``REQUEST_ID_BYTES``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from contracts.calibration import Coefficients
from contracts.plan import Unrunnable
from contracts.profile import DTYPE_BYTES
from contracts.wirebytes import batch_overhead_bytes
from contracts.workload import Workload
from foundation.units import FLOAT16_BYTES, FLOAT32_BYTES, GIB
from planner.costmodel.batch import learner_csc_bytes
from planner.costmodel.device import (
    ASSEMBLY_PASSES,
    batch_seconds,
    cache_budget_bytes,
    parameter_bytes,
    resident_batch_bytes,
)
from planner.costmodel.evaluation import Clusters, Details, Evaluation, ModelInputs, first_unrunnable
from planner.costmodel.gpu import StepWork, step_work
from planner.costmodel.interruptions import pipeline_hazard, spot_or_on_demand
from planner.costmodel.sampling import learner_sampling_cores, sampling_modes
from planner.costmodel.shards import ShardShares, read_share, shard_shares, window_rows

# The learner's loader keeps max(prefetch + 2, ring_slots) batches in flight: 4 at RemoteGNN's
# defaults (prefetch 2, 4 ring slots). Their receive buffers come out of the RAM a cache may use.
LEARNER_BATCH_BUFFERS = 4
# learner_cache="auto": the sizes tried on every cluster, as shares of the learner's free RAM (at
# most the whole feature matrix). A larger cache never slows an epoch; it only costs its fill at
# start-up, so where the link does not bound the epoch no cache finishes (a little) sooner.
AUTO_LEARNER_CACHE_SHARES = (0.0, 1.0)
# Bytes per feature value on the link. A wire dtype never widens a row: float16 features travel
# as float16 under float32 (exact either way). bfloat16 keeps float32's range with 8 mantissa bits.
WIRE_VALUE_BYTES = {"float32": FLOAT32_BYTES, "float16": FLOAT16_BYTES, "bfloat16": FLOAT16_BYTES}
# wire_dtype="auto": exact first (ties keep it), then float16, the more precise of the 2-byte types.
AUTO_WIRE_DTYPES = ("float32", "float16")


def effective_flows(flows: int) -> float:
    """How many flows' worth of bandwidth a message striped over ``flows`` TCP flows gets: Open MPI
    sends the first link two shares and every other link one (benchmarks/flows.py measured
    1, 1.5, 2, 2.5 and 4.4 for 1, 2, 3, 4 and 8 flows), and a capped flow finishes last."""
    return (flows + 1) / 2


def step_work_of(inputs: ModelInputs) -> StepWork:
    """One training step's work on the expected batch (see ``planner.costmodel.gpu``), in the
    blocks form the example trains (``remotegnn.blocks.seed_forward``); a profile without classes
    prices the last layer at the hidden width."""
    batch, workload, profile = inputs.batch, inputs.workload, inputs.profile
    classes = profile.num_classes or workload.hidden_dim
    return step_work(
        batch.nodes_per_hop, batch.edges_per_hop, profile.feature_dim, workload.hidden_dim, classes, form="blocks"
    )


def gpu_bytes(inputs: ModelInputs, work: StepWork) -> float:
    """GPU memory one step needs: the batch's rows, the activations with their gradients and the
    optimizer's share, and the edge index."""
    return inputs.batch.feature_bytes + 3 * work.activation_bytes + inputs.batch.edges * 16


def wire_value_bytes(wire_dtype: str, feature_dtype: str) -> int:
    """Bytes per feature value on the link for a (non-auto) wire dtype and the stored dtype."""
    return min(WIRE_VALUE_BYTES[wire_dtype], DTYPE_BYTES[feature_dtype])


def wire_dtype_name(workload: Workload, feature_dtype: str, value_bytes: float) -> str:
    """The precision rows travel in, given the bytes per value the model chose for a cluster."""
    if value_bytes >= DTYPE_BYTES[feature_dtype]:
        return feature_dtype  # sent as stored
    return workload.wire_dtype if workload.wire_dtype in WIRE_VALUE_BYTES else AUTO_WIRE_DTYPES[-1]


def learner_free_bytes_by_type(inputs: ModelInputs, *, samples: bool = False) -> np.ndarray:
    """RAM a learner cache may use, per catalog type: its RAM less the OS reserve and, for each
    data-parallel rank, a training process (``learner_reserve_gib``) and the receive buffers of its
    batches in flight (a compact frame each, in either sampling mode: a request's batch holds the
    same rows); where the learner ``samples``, less its CSC too (negative: the CSC does not fit)."""
    co = inputs.coefficients
    per_rank = co.learner_reserve_gib * GIB + LEARNER_BATCH_BUFFERS * inputs.batch.wire_bytes
    reserve = co.os_reserve_gib * GIB + inputs.learner_ranks * per_rank
    free = np.maximum(inputs.columns.memory_gib * GIB - reserve, 0.0)
    return free - learner_csc_bytes(inputs.profile) if samples else free


@dataclass(frozen=True)
class _Fixed:
    """Per-cluster figures every data-path choice shares, so pricing a choice is a few vector operations.

    Each stage a choice changes is linear in what it changes: the volume's time in the share of
    reads that miss every cache, the CPU's and the link's in the share that crosses the link.
    Numpy allocates a fresh array for every temporary, which on 400,000 clusters costs more than
    the arithmetic, so only per-cluster factors are kept here (the rest are scalars) and choices
    are priced with in-place operations.
    """

    two: np.ndarray  # bool: a two-level cluster
    memory_fraction: np.ndarray  # f_M: rows the data machines' caches could hold (share of all)
    miss_s: np.ndarray  # volume seconds per epoch if every read missed (per data machine)
    batches_per_core: np.ndarray  # batches per epoch per vCPU of a data machine
    link_s_per_byte: np.ndarray  # 0 on a single machine
    learner_sampling_s: np.ndarray  # the learner's seconds per epoch if it samples (0 on a single machine)
    startup_s_per_byte: np.ndarray  # a start-up read: the volume's, or one core's sweep where that is slower
    startup_fixed_s: float  # launching the job and choosing the caches: the same on every cluster
    per_machine: np.ndarray  # 1 / data machines
    window_share: np.ndarray  # t: share of the file's read-ahead windows that hold a data machine's rows
    own_density: np.ndarray  # rho: share of those windows' rows that are its own
    gpu: _Gpu


@dataclass(frozen=True)
class _Gpu:
    """Per-cluster figures of the learner's GPUs that every data-path choice shares."""

    step_s: np.ndarray  # one training step on one GPU
    batches_per_gpu: np.ndarray  # the epoch's batches over the ranks (at data_parallel_efficiency)
    assembly_s: np.ndarray  # assembling x on the device from the cache and the copied misses
    capacity_bytes: np.ndarray  # memory of one GPU, per catalog type
    step_bytes: float  # device memory one step of the mean batch needs


@dataclass(frozen=True)
class _DataPath:
    """One data-path choice priced on every cluster: the stages it changes."""

    learner_fraction: np.ndarray  # f_L: rows the learner holds, on its GPU and in its RAM
    union_fraction: np.ndarray  # f_U: rows held in some RAM
    learner_hits: np.ndarray  # H(f_L)
    device_fraction: np.ndarray  # f_D: rows each training GPU holds
    device_hits: np.ndarray  # H(f_D)
    union_hits: np.ndarray  # H(f_U)
    value_bytes: np.ndarray | float  # bytes per feature value on the link
    learner_samples: np.ndarray  # bool: the learner samples (two-level clusters only)
    volume_s: np.ndarray
    cpu_s: np.ndarray
    network_s: np.ndarray
    gpu_s: np.ndarray
    startup_s: np.ndarray

    def total_s(self, epochs: int) -> np.ndarray:
        total = np.maximum(self.volume_s, self.cpu_s)
        np.maximum(total, self.network_s, out=total)
        np.maximum(total, self.gpu_s, out=total)
        total *= epochs
        total += self.startup_s
        return total


_PATH_FIELDS = fields(_DataPath)


def startup_read_bps(volume_bps: Any, co: Coefficients) -> Any:
    """Bytes per second a data machine's start-up reads at: its volume's rate, or one core's sweep
    into RAM (``sweep_gbps``) where that is slower."""
    return np.minimum(volume_bps, co.sweep_gbps * 1e9)


def startup_fixed_s(inputs: ModelInputs) -> float:
    """Start-up seconds that read nothing: launching the job, and the data machines choosing their
    caches, each ranking every node at once (one core each, so the same on every cluster)."""
    co = inputs.coefficients
    return co.job_start_s + inputs.profile.num_nodes / co.rank_nodes_per_s


def _fixed(
    inputs: ModelInputs,
    clusters: Clusters,
    memory_fraction: np.ndarray,
    volume_bps: np.ndarray,
    volume_iops: np.ndarray,
    link_bytes_s: np.ndarray,
    gpu: _Gpu,
    shares: ShardShares,
) -> _Fixed:
    co, profile, batch = inputs.coefficients, inputs.profile, inputs.batch
    per_machine = 1.0 / clusters.data_machines  # data machines share reads, gathering and the shard
    bytes_per_miss = inputs.miss_bytes
    ios_per_miss = math.ceil(profile.row_bytes / co.io_max_bytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        volume_s_per_byte = 1.0 / volume_bps
        miss_s = np.maximum(bytes_per_miss * volume_s_per_byte, ios_per_miss / volume_iops)
        miss_s *= per_machine
        miss_s *= batch.batches_per_epoch * batch.nodes
        batches_per_core = per_machine / inputs.columns.vcpus[clusters.data_machine]
        batches_per_core *= batch.batches_per_epoch
        two = clusters.count > 0
        link_s_per_byte = np.where(two, 1.0 / link_bytes_s, 0.0)
        startup_s_per_byte = 1.0 / startup_read_bps(volume_bps, co)
    sampling_s = batch.batches_per_epoch * batch.edges / co.sample_edges_per_core_s
    learner_sampling_s = np.where(two, sampling_s / learner_sampling_cores(inputs, clusters), 0.0)
    return _Fixed(
        two=two,
        memory_fraction=memory_fraction,
        miss_s=miss_s,
        batches_per_core=batches_per_core,
        link_s_per_byte=link_s_per_byte,
        learner_sampling_s=learner_sampling_s,
        startup_s_per_byte=startup_s_per_byte,
        startup_fixed_s=startup_fixed_s(inputs),
        per_machine=per_machine,
        window_share=shares.window_share[clusters.data_machines],
        own_density=shares.own_density[clusters.data_machines],
        gpu=gpu,
    )


def _price_path(
    inputs: ModelInputs, fixed: _Fixed, sizes: _LearnerSizes, value_bytes: float, learner_samples: bool
) -> _DataPath:
    """The stages with ``sizes`` of the rows on the learner and its GPUs, ``value_bytes`` per
    feature value on the link, and the batches sampled by the learner of a two-level cluster if
    ``learner_samples`` (else by the machines holding the graph)."""
    learner_fraction, learner_hits = sizes.fraction, sizes.hits
    co, profile, batch = inputs.coefficients, inputs.profile, inputs.batch
    curve = profile.curve(inputs.workload.cache_policy)
    features = float(profile.feature_bytes)
    if co.memory_cache_skips_learner_rows:
        union = learner_fraction + fixed.memory_fraction
        np.minimum(union, 1.0, out=union)
    else:
        union = np.maximum(learner_fraction, fixed.memory_fraction)
    union_hits = curve.hit_rate(union)
    crossing = 1.0 - learner_hits
    with np.errstate(invalid="ignore"):
        volume_s = 1.0 - union_hits
        volume_s *= fixed.miss_s
        # fmax drops the NaN of inf x 0: a machine without EBS bandwidth that never misses reads nothing.
        np.fmax(volume_s, 0.0, out=volume_s)
    # CPU: sampling every batch, gathering only the rows that are sent; a learner that samples
    # takes the sampling off the memory machines, and the slower side sets the stage.
    samples = fixed.two & learner_samples
    cpu_s = crossing * (batch.feature_bytes / (co.gather_gbps_per_core * 1e9))
    cpu_s += np.where(samples, 0.0, batch.edges / co.sample_edges_per_core_s)
    cpu_s *= fixed.batches_per_core
    if learner_samples:
        np.maximum(cpu_s, fixed.learner_sampling_s, out=cpu_s)
    # Start-up, once the job is launched and the caches chosen (``startup_fixed_s``): each data
    # machine loads the structure and the share f_U of its rows held in RAM (its own cache's and
    # the learner's, hot rows spread evenly over its rows) from its volume, no faster than one
    # core sweeps them (``sweep_gbps``); the learner's rows also cross the link. A fill reads
    # whole read-ahead windows of w rows, so it reads every window holding one of the rows it
    # needs: t x (1 - (1 - f_U x rho)^w) of the
    # file, where t is the share of windows holding its rows and rho its share of their rows
    # (``planner.costmodel.shards``): about (1 - (1 - f_U)^w) / k for a part of its own (striped,
    # range), 1 - (1 - f_U/k)^w for rows spread over the file (modulo).
    window = window_rows(profile)
    startup_s = union * fixed.own_density
    np.subtract(1.0, startup_s, out=startup_s)
    # Below this floor the power is under 1e-30, so 1 less it is exactly 1.0 either way: clamping
    # changes no figure and keeps pow off its slow path for results that underflow (4x faster).
    np.maximum(startup_s, 1e-30 ** (1.0 / window), out=startup_s)
    startup_s **= window
    np.subtract(1.0, startup_s, out=startup_s)
    startup_s *= fixed.window_share
    startup_s *= features
    startup_s += float(profile.structure_bytes)
    startup_s *= fixed.startup_s_per_byte
    # Every learner machine fills a cache of its own: m times the rows cross the links, which
    # carry m learners' baselines but no more than the memory machines send. A learner that
    # samples is sent its CSC then too.
    learners = inputs.workload.learner_machines
    fill_bytes = float(profile.num_nodes) * profile.feature_dim * value_bytes * learners
    fill_s = learner_fraction * fill_bytes  # sent as on the wire
    if learner_samples:
        fill_s += float(learner_csc_bytes(profile) * learners)
    fill_s *= fixed.link_s_per_byte
    np.maximum(startup_s, fill_s, out=startup_s)
    startup_s += fixed.startup_fixed_s
    return _DataPath(
        learner_fraction=learner_fraction,
        union_fraction=union,
        learner_hits=learner_hits,
        union_hits=union_hits,
        value_bytes=value_bytes,
        learner_samples=samples,
        volume_s=volume_s,
        cpu_s=cpu_s,
        device_fraction=sizes.device_fraction,
        device_hits=sizes.device_hits,
        network_s=_network_s(inputs, fixed, crossing, value_bytes, learner_samples),
        gpu_s=_gpu_s(inputs, fixed.gpu, sizes, value_bytes),
        startup_s=startup_s,
    )


def _gpu_s(inputs: ModelInputs, gpu: _Gpu, sizes: _LearnerSizes, value_bytes: float) -> np.ndarray:
    """GPU seconds per epoch: every batch's step overlapped with the copy of the rows its GPU's cache
    misses (``planner.costmodel.device``)."""
    batch = inputs.batch
    copy_s = 1.0 - sizes.device_hits
    copy_s *= batch.nodes * inputs.profile.feature_dim * value_bytes / (inputs.coefficients.pcie_gbps * 1e9)
    assembly_s = np.where(sizes.device_fraction > 0, gpu.assembly_s, 0.0)
    gpu_s = batch_seconds(gpu.step_s, copy_s, assembly_s)
    gpu_s *= gpu.batches_per_gpu
    return gpu_s


def _network_s(
    inputs: ModelInputs, fixed: _Fixed, crossing: np.ndarray, value_bytes: float, learner_samples: bool
) -> np.ndarray:
    """Link seconds per epoch: the ``crossing`` share of rows at ``value_bytes``, and the compact
    frames' structure, or (``learner_samples``) the ids of those rows as the learner asks for them."""
    batch = inputs.batch
    network_s = crossing * (batch.batches_per_epoch * batch.nodes * inputs.profile.feature_dim * value_bytes)
    if learner_samples:
        network_s += batch.batches_per_epoch * batch.request_wire_bytes(crossing)
    else:
        network_s += batch.batches_per_epoch * batch.id_wire_bytes
    network_s += batch.batches_per_epoch * batch_overhead_bytes(1.0 / fixed.per_machine, learner_samples)
    network_s *= fixed.link_s_per_byte
    return network_s


def _choose_path(inputs: ModelInputs, clusters: Clusters, fixed: _Fixed) -> tuple[_DataPath, _PathLimits]:
    """The request's data path on every cluster, and where a fixed learner or GPU cache, or the
    learner's CSC, does not fit.

    A fixed learner cache, wire dtype or sampling mode is priced as given; ``auto`` tries its
    options on every cluster (the sampling modes x AUTO_LEARNER_CACHE_SHARES x the wire dtypes
    allowed) and keeps the one with the least total time, which is also the least cost (the hourly
    price does not depend on it). Ties keep the earlier option: the memory machines sampling, exact
    wire, no cache. An option that cannot run on a cluster (a cache or a CSC that does not fit the
    learner) is never kept where another can. The learner keeps its rows in the wire dtype (what
    arrived), so the same bytes hold more rows at a narrower one. Searching per cluster adds no
    candidates to the grid.
    """
    workload, profile = inputs.workload, inputs.profile
    dtypes = AUTO_WIRE_DTYPES if workload.wire_dtype == "auto" else (workload.wire_dtype,)
    values = list(dict.fromkeys(float(wire_value_bytes(d, profile.feature_dtype)) for d in dtypes))
    modes = sampling_modes(workload)
    # Per mode, where it cannot run on a two-level cluster: the cache asked for, or the CSC, does not fit.
    cache_too_big, csc_too_big = {}, {}
    for mode in modes:
        free = learner_free_bytes_by_type(inputs, samples=mode == "learner")[clusters.learner]
        csc_too_big[mode] = fixed.two & (free < 0)
        cache_too_big[mode] = np.zeros(len(clusters), dtype=bool)
        if workload.learner_cache not in ("auto", "none"):
            cache_too_big[mode] = fixed.two & (float(workload.learner_cache) * GIB > free)
    device = {value: _device_sizes(inputs, clusters, fixed, value) for value in values}
    paths = (
        (mode, _price_path(inputs, fixed, sizes, value, mode == "learner"))
        for mode in modes
        for value in values
        for sizes in _learner_sizes(inputs, clusters, fixed, value, device[value][0], samples=mode == "learner")
    )
    # The widest precision needs the most room: a cache that fits it fits every option.
    _, device_budget, device_too_big = device[values[0]]
    first_mode, best = next(paths)
    best = dataclasses.replace(best, value_bytes=np.full(len(clusters), best.value_bytes))
    # Every option's arrays are its own, so the best is updated in place.
    best_total = best.total_s(workload.epochs)
    best_total[cache_too_big[first_mode] | csc_too_big[first_mode]] = np.inf
    for mode, path in paths:
        total = path.total_s(workload.epochs)
        total[cache_too_big[mode] | csc_too_big[mode]] = np.inf
        better = total < best_total
        np.copyto(best_total, total, where=better)
        for f in _PATH_FIELDS:
            np.copyto(getattr(best, f.name), getattr(path, f.name), where=better)
    # Where no mode runs, the first mode's reason stands (auto: the cache that fits neither).
    stuck = np.logical_and.reduce([cache_too_big[mode] | csc_too_big[mode] for mode in modes])
    limits = _PathLimits(
        learner_too_big=stuck & cache_too_big[first_mode],
        csc_too_big=stuck & ~cache_too_big[first_mode] & csc_too_big[first_mode],
        device_too_big=device_too_big,
        device_budget=device_budget,
    )
    return best, limits


@dataclass(frozen=True)
class _PathLimits:
    """Where a cache asked for, or the CSC a sampling learner needs, does not fit, and what each GPU
    could hold (bytes, per catalog type)."""

    learner_too_big: np.ndarray
    csc_too_big: np.ndarray
    device_too_big: np.ndarray
    device_budget: np.ndarray


@dataclass(frozen=True)
class _LearnerSizes:
    """One learner cache size priced on every cluster: what the learner holds (its GPUs' rows and
    its RAM's, f_L) and what each GPU holds (f_D), with the shares of reads they serve."""

    fraction: np.ndarray
    hits: np.ndarray
    device_fraction: np.ndarray
    device_hits: np.ndarray


def _device_sizes(
    inputs: ModelInputs, clusters: Clusters, fixed: _Fixed, value_bytes: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per catalog type, the share of rows one GPU's cache holds at ``value_bytes`` per value (the
    loader keeps them at the wire precision) and the most it may hold (bytes); per cluster, whether
    the size asked for does not fit beside the model and the batches (``planner.costmodel.device``)."""
    workload, profile, gpu = inputs.workload, inputs.profile, fixed.gpu
    rows_bytes = float(profile.num_nodes) * profile.feature_dim * value_bytes  # as the learner cache counts them
    copy_bytes = inputs.batch.nodes * profile.feature_dim * value_bytes
    budget = cache_budget_bytes(
        gpu.capacity_bytes, parameter_bytes(profile, workload), resident_batch_bytes(gpu.step_bytes, copy_bytes)
    )
    asked = workload.gpu_cache_gib
    wanted = budget if asked == "auto" else np.full_like(budget, float(asked) * GIB)
    too_big = wanted[clusters.learner] > budget[clusters.learner]
    return np.minimum(wanted / rows_bytes, 1.0), budget, too_big


def _learner_sizes(
    inputs: ModelInputs,
    clusters: Clusters,
    fixed: _Fixed,
    value_bytes: float,
    device_by_type: np.ndarray,
    *,
    samples: bool,
) -> list[_LearnerSizes]:
    """The learner cache sizes the workload allows, per cluster, rows kept at ``value_bytes`` per
    value, above ``device_by_type`` of the rows on each GPU (a tier above: the learner holds the
    top f_D + its RAM's share, its GPUs the top f_D), beside its CSC where it ``samples``. Only a
    two-level learner caches in RAM."""
    workload, profile = inputs.workload, inputs.profile
    curve = profile.curve(workload.cache_policy)
    wire_features = float(profile.num_nodes) * profile.feature_dim * value_bytes
    if workload.learner_cache in ("auto", "none"):
        free = np.maximum(learner_free_bytes_by_type(inputs, samples=samples), 0.0)
        usable = np.minimum(free, wire_features) / wire_features
        shares = [share * usable for share in (AUTO_LEARNER_CACHE_SHARES if workload.learner_cache == "auto" else (0,))]
    else:
        shares = [np.full_like(device_by_type, min(float(workload.learner_cache) * GIB / wire_features, 1.0))]
    # Fractions depend on the learner type only: take H on the catalog's rows, then spread it.
    learner = clusters.learner
    device = device_by_type[learner]
    device_hits = curve.hit_rate(device_by_type)[learner]
    sizes = []
    for by_type in shares:
        held = np.minimum(by_type + device_by_type, 1.0)
        sizes.append(
            _LearnerSizes(
                fraction=np.where(fixed.two, held[learner], device),
                hits=np.where(fixed.two, curve.hit_rate(held)[learner], device_hits),
                device_fraction=device,
                device_hits=device_hits,
            )
        )
    return sizes


def _details(inputs: ModelInputs, clusters: Clusters, fixed: _Fixed, path: _DataPath, **stored: np.ndarray) -> Details:
    """What the explanation quotes: the arrays already computed, and formulas over them for the rest."""
    co, profile, batch = inputs.coefficients, inputs.profile, inputs.batch
    reads = batch.batches_per_epoch * batch.nodes
    free_by_type = learner_free_bytes_by_type(inputs)
    csc = float(learner_csc_bytes(profile))
    frames_per_epoch = batch.batches_per_epoch * batch.id_wire_bytes
    window = window_rows(profile)

    def wire_rows_bytes(d: Any) -> Any:
        """Bytes of every feature row at the chosen wire precision (the learner keeps rows so)."""
        return float(profile.num_nodes) * profile.feature_dim * d["wire_value_bytes"]

    def startup_read_bytes(d: Any) -> Any:
        share = read_share(d["window_share"], d["own_density"], d["union_fraction"], window)
        return profile.structure_bytes + profile.feature_bytes * share

    def feature_wire(d: Any) -> Any:
        return d["two"] * (reads * (1.0 - d["learner_hit_rate"]) * profile.feature_dim * d["wire_value_bytes"])

    def id_wire(d: Any) -> Any:
        """The compact frames' structure, or the ids a sampling learner asks for."""
        requests = batch.batches_per_epoch * batch.request_wire_bytes(1.0 - d["learner_hit_rate"])
        overhead = batch.batches_per_epoch * np.where(
            d["learner_samples"],
            batch_overhead_bytes(d["shards"], learner_samples=True),
            batch_overhead_bytes(d["shards"], learner_samples=False),
        )
        return d["two"] * (np.where(d["learner_samples"], requests, frames_per_epoch) + overhead)

    derived = {
        # The data machines' RAM caches: the rows they hold and the share of all reads they serve.
        "cache_fraction": (lambda d: d["union_fraction"] - d["learner_held_fraction"])
        if co.memory_cache_skips_learner_rows
        else (lambda d: d["memory_fraction"]),
        "hit_rate": lambda d: d["union_hit_rate"] - d["learner_hit_rate"],
        "learner_cache_gib": lambda d: d["learner_cache_fraction"] * wire_rows_bytes(d) / GIB,
        # What its cache may use: beside its CSC where it samples.
        "learner_free_gib": lambda d: (
            d["two"] * np.maximum(free_by_type[d["learner"]] - d["learner_samples"] * csc, 0.0) / GIB
        ),
        "learner_csc_gib": lambda d: d["learner_samples"] * csc / GIB,
        "volume_share": lambda d: 1.0 - d["union_hit_rate"],
        "memory_hit_rate": lambda d: np.where(
            d["learner_hit_rate"] < 1.0,
            (d["union_hit_rate"] - d["learner_hit_rate"]) / (1.0 - d["learner_hit_rate"]),
            0.0,
        ),
        "misses_per_machine": lambda d: reads * (1.0 - d["union_hit_rate"]) / d["shards"],
        # Each data machine's start-up: what it reads from its volume and how long that takes (the
        # learner's fill may take longer), what else start-up costs, and what staging copies it.
        "startup_read_gb": lambda d: startup_read_bytes(d) / 1e9,
        "startup_read_s": lambda d: startup_read_bytes(d) / startup_read_bps(d["volume_bps"], co),
        "startup_fixed_s": lambda d: np.full_like(d["shards"], fixed.startup_fixed_s, dtype=float),
        "staged_gb": lambda d: d["staged_bytes"] / 1e9,
        "volume_mbps_effective": lambda d: d["volume_bps"] / 1e6,
        "link_gbps": lambda d: d["two"] * d["link_gbps_both"],
        "flows": lambda d: np.full_like(d["shards"], inputs.workload.flows, dtype=float),
        "effective_flows": lambda d: np.full_like(d["shards"], effective_flows(inputs.workload.flows), dtype=float),
        "epoch_wire_feature_gb": lambda d: feature_wire(d) / 1e9,
        "epoch_wire_id_gb": lambda d: id_wire(d) / 1e9,
        "epoch_wire_gb": lambda d: (id_wire(d) + feature_wire(d)) / 1e9,
        # Each GPU's cache, and the rows copied to the GPUs per epoch: every read its cache misses.
        "gpu_cache_gib": lambda d: d["device_fraction"] * wire_rows_bytes(d) / GIB,
        "gpu_cache_free_gib": lambda d: d["gpu_cache_free_bytes"] / GIB,
        "h2d_gb_per_epoch": lambda d: (
            reads * (1.0 - d["device_hit_rate"]) * profile.feature_dim * d["wire_value_bytes"] / 1e9
        ),
    }
    return Details(
        {
            "two": fixed.two,
            "learner": clusters.learner,
            "learner_ranks": inputs.workload.learner_machines * inputs.learner_ranks[clusters.learner],
            "learner_machines": np.full(len(clusters), float(inputs.workload.learner_machines)),
            "shards": clusters.data_machines,
            "memory_fraction": fixed.memory_fraction,
            "learner_cache_fraction": path.learner_fraction - path.device_fraction,  # in its RAM
            "learner_held_fraction": path.learner_fraction,
            "device_fraction": path.device_fraction,
            "device_hit_rate": path.device_hits,
            "union_fraction": path.union_fraction,
            "learner_hit_rate": path.learner_hits,
            "union_hit_rate": path.union_hits,
            "wire_value_bytes": np.broadcast_to(path.value_bytes, fixed.two.shape),  # an array after _choose_path
            "learner_samples": path.learner_samples,
            "learner_sampling_s": fixed.learner_sampling_s,
            "window_share": fixed.window_share,
            "own_density": fixed.own_density,
            **stored,
        },
        derived,
    )


def _gpu(inputs: ModelInputs, clusters: Clusters, work: StepWork) -> _Gpu:
    """The learner GPUs' figures every data path shares: a step, the batches each GPU trains on, the
    assembly of ``x`` from a device cache (the step's memory traffic: ``ASSEMBLY_PASSES``), memory."""
    co, cols, batch = inputs.coefficients, inputs.columns, inputs.batch
    memory_gbps = inputs.learner_memory_gbps[clusters.learner]
    step_s = np.asarray(work.seconds(co, inputs.learner_tflops[clusters.learner], memory_gbps), dtype=float)
    ranks = inputs.workload.learner_machines * inputs.learner_ranks[clusters.learner]
    assembly_bytes = ASSEMBLY_PASSES * batch.nodes * inputs.profile.feature_dim * FLOAT32_BYTES
    return _Gpu(
        step_s=step_s,
        batches_per_gpu=batch.batches_per_epoch / np.where(ranks > 1, ranks * co.data_parallel_efficiency, 1.0),
        assembly_s=assembly_bytes / (memory_gbps * 1e9 * co.gpu_memory_efficiency),
        capacity_bytes=cols.gpu_memory_gib / np.maximum(cols.gpu_count, 1) * GIB,
        step_bytes=gpu_bytes(inputs, work),
    )


def evaluate(inputs: ModelInputs, clusters: Clusters) -> Evaluation:
    cols, co, profile = inputs.columns, inputs.coefficients, inputs.profile
    two = clusters.count > 0
    data = clusters.data_machine
    shards = clusters.data_machines

    # Data machines' caches: RAM minus reserve minus structure on each; shards' caches add up.
    reserve_gib = np.where(two, co.os_reserve_gib, co.os_reserve_gib + co.learner_reserve_gib)
    cache_bytes = cols.memory_gib[data] - reserve_gib
    cache_bytes *= GIB
    cache_bytes -= profile.structure_bytes
    memory_fraction = np.clip(cache_bytes, 0.0, None)
    memory_fraction *= shards / profile.feature_bytes
    np.minimum(memory_fraction, 1.0, out=memory_fraction)

    volume_bps = np.minimum(cols.ebs_baseline_mbps[data], clusters.volume_mbps)
    volume_bps *= 1e6 * co.volume_efficiency
    volume_iops = np.minimum(cols.ebs_baseline_iops[data], clusters.volume_iops)
    volume_iops *= co.volume_efficiency
    # A memory machine streams over `flows` TCP flows, each capped by AWS; the learner takes them all.
    ena_express = inputs.ena_express_links(clusters)
    flow_caps = inputs.flow_caps_gbps(ena_express)
    flows_gbps = effective_flows(inputs.workload.flows) * flow_caps
    # With several learner machines each memory machine streams to every one of them (flows each).
    learners = inputs.workload.learner_machines
    flow_gbps = np.minimum(cols.network_baseline_gbps[data], learners * flows_gbps)
    link_gbps = np.minimum(learners * cols.network_baseline_gbps[clusters.learner], shards * flow_gbps)

    # GPU: the learner's GPUs share the epoch's steps, one data-parallel rank each.
    work = step_work_of(inputs)
    tflops = inputs.learner_tflops[clusters.learner]
    gpu = _gpu(inputs, clusters, work)
    # What each data machine holds and reads depends on how rows are dealt to the k of them.
    shares = shard_shares(inputs.workload.shard_layout, profile, int(shards.max(initial=1)))
    fixed = _fixed(
        inputs,
        clusters,
        memory_fraction,
        volume_bps,
        volume_iops,
        link_gbps * (1e9 / 8 * co.network_efficiency),
        gpu,
        shares,
    )
    path, limits = _choose_path(inputs, clusters, fixed)

    # Each volume holds what staging copies it: the structure and the feature rows of its part.
    staged_bytes = shares.staged_bytes[shards]
    volume_gb = inputs.volume_size_gb(clusters, staged_bytes)
    volumes_hourly = shards * inputs.volume.hourly_usd(volume_gb, clusters.volume_iops, clusters.volume_mbps)

    def hourly_at(spot: bool) -> np.ndarray:
        price = cols.price(spot)
        machines = learners * price[clusters.learner]
        machines += np.where(two, clusters.count * price[np.maximum(clusters.memory, 0)], 0.0)
        return machines + volumes_hourly

    hourly = hourly_at(inputs.spot)
    gpu_capacity = gpu.capacity_bytes[clusters.learner]
    infeasible = first_unrunnable(
        {
            Unrunnable.NO_PRICE: ~np.isfinite(hourly),
            Unrunnable.UNSUPPORTED_GPU: ~np.isfinite(tflops),
            Unrunnable.STRUCTURE_EXCEEDS_RAM: cache_bytes < 0,
            Unrunnable.BATCH_EXCEEDS_GPU: gpu_bytes(inputs, work) > gpu_capacity * co.gpu_memory_headroom,
            Unrunnable.VOLUME_TOO_LARGE: volume_gb > inputs.volume.max_size_gb,
            Unrunnable.LEARNER_CACHE_EXCEEDS_RAM: limits.learner_too_big,
            Unrunnable.ONE_LEARNER_ALONE: ~two & (learners > 1),
            Unrunnable.GPU_CACHE_EXCEEDS_GPU: limits.device_too_big,
            Unrunnable.CSC_EXCEEDS_LEARNER_RAM: limits.csc_too_big,
        }
    )
    ev = Evaluation(
        model="pipeline",
        stages={"volume": path.volume_s, "cpu": path.cpu_s, "network": path.network_s, "gpu": path.gpu_s},
        startup_s=path.startup_s,
        hourly_usd=hourly,
        volume_gb=volume_gb,
        infeasible=infeasible,
        epochs=inputs.workload.epochs,
        details=_details(
            inputs,
            clusters,
            fixed,
            path,
            volume_bps=volume_bps,
            volume_iops_effective=volume_iops,
            link_gbps_both=link_gbps,
            flow_cap_binds=cols.network_baseline_gbps[data] > flows_gbps,
            flow_cap_gbps=flow_caps,
            ena_express=ena_express,
            gpu_cache_free_bytes=limits.device_budget[clusters.learner],
            staged_bytes=staged_bytes,
        ),
    )
    return spot_or_on_demand(inputs, ev, hourly_at(False), pipeline_hazard(inputs, clusters)) if inputs.spot else ev
