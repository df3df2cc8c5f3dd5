"""The worker processes: batch creators (sampling) and vector loaders (feature rows).

Both run in forked children and share, through inherited mappings, the dataset's memory maps,
the feature cache's rows, the epoch's seed order and the two rings. Batch b always lands in
slot b % ring_slots of both rings; the learner hands out batch b+slots only after consuming b,
so a slot is never overwritten while in use and nobody waits for a slot (no deadlock whatever
order the workers finish in). A worker that fails writes an ERROR frame and sets ``failed``, so
the learner can say what went wrong instead of only that a process died.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from remotegnn import compact, wire
from remotegnn.cache import FeatureCache
from remotegnn.cache.kernels import select_sent
from remotegnn.precision import to_wire
from remotegnn.sampling import NeighborSampler
from remotegnn.server.control import IndexQueue
from remotegnn.server.options import PipelineOptions
from remotegnn.server.ring import SharedRing, part_specs
from remotegnn.server.shard import Shard
from remotegnn.store import GraphDataset

POLL_S = 0.1
STAT_BATCHES, STAT_BUSY, STAT_STALL, STAT_HITS, STAT_MISSES, STAT_ROWS_SENT, STAT_BYTES_SENT = range(7)
STAT_VOLUME_BYTES, STAT_VOLUME_REQUESTS, STAT_VOLUME_IO, STAT_VOLUME_THROTTLED = range(7, 11)
STAT_FIELDS = 11
STAT_DTYPE: Final = np.dtype(np.float64)
"""``Shared.stats``' counters."""
ORDER_DTYPE: Final = np.dtype(np.int64)
"""``Shared.order``'s ids and ``Shared.bounds``' offsets (the shared "order" ring holds both)."""
ORDER_ROWS: Final = 2  # Shared.order: seed node ids (row 0), input ids (row 1)
ORDER_COLUMN_BYTES: Final = ORDER_ROWS * ORDER_DTYPE.itemsize
"""Bytes of one seed's column of ``Shared.order``."""
ERROR_TEXT_BYTES = 1 << 14
"""Most UTF-8 bytes of a failed worker's message: a 4-frame traceback is ~1 KB, so this keeps
all of it and the start of even a very long message. The error slot is sized from it."""
ERROR_SLOT_BYTES = wire.text_frame_size(ERROR_TEXT_BYTES)
"""The pipeline's error slot: one ERROR frame of ``ERROR_TEXT_BYTES`` with its header, so every
message ``_fail`` writes fits (one that did not would leave the learner a frame error instead)."""


@dataclass
class Shared:
    """Everything the workers share with the learner-side pipeline (inherited through fork)."""

    dataset: GraphDataset
    options: PipelineOptions
    cache: FeatureCache  # this memory rank's RAM cache
    held: np.ndarray  # bool per node: rows the learner holds, never sent (empty: it holds none)
    wire_dtype: np.dtype  # what feature rows travel as
    order: np.ndarray  # [ORDER_ROWS, n] this epoch's seed node ids (row 0) and input ids (row 1)
    bounds: np.ndarray  # [batches + 1] batch b's seeds are order[:, bounds[b]:bounds[b + 1]]
    control: Any  # shared int64: epoch, number of seeds
    blueprints: SharedRing
    frames: SharedRing
    errors: SharedRing
    tasks: IndexQueue  # batch indices for the batch creators
    built: IndexQueue  # batch indices whose blueprint is ready for a vector loader
    ready: list  # one semaphore per frame slot: released when its batch is done
    stop: Any  # event: shut down
    failed: Any  # event: a worker wrote an ERROR frame
    stats: np.ndarray  # [workers, STAT_FIELDS] float64 counters, reset per epoch
    parent: int  # the learner's pid: orphans exit when it changes
    shard: Shard  # which feature rows (and which batches' sampling) are this server's
    sampled: list | None  # per blueprint slot, released when sampled (only if shard.count > 1)


def _next(shared: Shared, queue: IndexQueue, row: np.ndarray) -> int | None:
    """Wait for the next batch index, counting the wait as stall; None when it is time to stop."""
    started = time.perf_counter()
    while not shared.stop.is_set() and os.getppid() == shared.parent:
        value = queue.get(timeout=POLL_S)
        if value is not None:
            row[STAT_STALL] += time.perf_counter() - started
            return None if value < 0 else value
    return None


def _fail(shared: Shared, who: str) -> None:
    """Write the exception being handled, cut to ``ERROR_TEXT_BYTES``, into the error slot; set ``failed``."""
    message = wire.truncate_utf8(f"{who} failed: {traceback.format_exc(limit=4).strip()}", ERROR_TEXT_BYTES)
    try:
        wire.encode(shared.errors.slot(0), wire.Kind.ERROR, 0, 0, 0, {"text": wire.text_tensor(message)})
    finally:
        shared.failed.set()


def batch_creator(shared: Shared, worker: int) -> None:
    """Sample each batch's k-hop subgraph (keys: seed, epoch, batch) into its blueprint slot."""
    try:
        options, row = shared.options, shared.stats[worker]
        hetero = options.type_fanouts is not None
        sampler = NeighborSampler(
            shared.dataset.csc,
            options.type_fanouts if hetero else options.num_neighbors,
            replace=options.replace,
            weights=shared.dataset.edge_weights if options.weight_attr is not None else None,
            disjoint=options.disjoint,
            etype=shared.dataset.edge_types if hetero else None,
        )
        meta = shared.dataset.meta
        while (batch := _next(shared, shared.tasks, row)) is not None:
            started = time.perf_counter()
            epoch = int(shared.control[0])
            lo, hi = int(shared.bounds[batch]), int(shared.bounds[batch + 1])
            sub = sampler.sample(shared.order[0, lo:hi], options.seed, epoch, batch)
            parts = compact.encode(
                sub.n_id,
                sub.edge_index,
                sub.e_id if options.edge_ids else None,
                shared.order[1, lo:hi],
                np.asarray(sub.num_sampled_nodes),
                np.asarray(sub.num_sampled_edges),
                num_nodes=meta.num_nodes,
                num_edges=meta.num_edges,
            )
            pending = wire.write_frame(
                shared.blueprints.slot(batch),
                wire.Kind.BLUEPRINT,
                epoch,
                batch,
                batch,
                compact.specs_of(parts),
                header_checksum_only=True,
            )
            compact.fill(pending.views, parts)
            pending.seal()
            if shared.sampled is not None:  # the MPI server forwards it to the other memory ranks
                shared.sampled[batch % len(shared.sampled)].release()
            row[STAT_BATCHES] += 1  # counted before it is handed on, so no frame is ever ahead of the count
            row[STAT_BUSY] += time.perf_counter() - started
            shared.built.put(batch)
    except BaseException:
        _fail(shared, f"batch creator {worker}")


def vector_loader(shared: Shared, worker: int, volume_limits) -> None:
    """Turn blueprints into batches: structure copied, feature rows gathered straight into the
    frame from the cache (misses from the volume, or the page cache without one; through a
    scratch buffer when the wire dtype differs), labels taken. Only the rows this rank owns and the
    learner does not hold are sent; a frame for a batch another rank sampled holds only those."""
    volume = None
    try:
        options, row, dataset, shard = shared.options, shared.stats[worker], shared.dataset, shared.shard
        meta = dataset.meta
        labels = dataset.labels if "labels" in meta.files else None
        if volume_limits is not None:  # one volume shared by all vector loaders: each paces to its share
            from remotegnn.volume import FeatureVolume

            share = options.vector_loaders
            volume = FeatureVolume(
                dataset,
                volume_limits.model_copy(
                    update={"mb_per_s": volume_limits.mb_per_s / share, "iops": volume_limits.iops / share}
                ),
            )
        checksum_header = options.checksum == "header"
        convert = shared.wire_dtype != np.dtype(meta.feature_dtype)
        positions = np.empty(0, dtype=np.int64)
        scratch = np.empty((0, meta.feature_dim), dtype=meta.feature_dtype)
        while (batch := _next(shared, shared.built, row)) is not None:
            started = time.perf_counter()
            blueprint = wire.decode(shared.blueprints.slot(batch))
            n_id = blueprint["n_id"].astype(np.int64)  # positions travel narrow; reads index in int64
            if shard.whole and len(shared.held) == 0:
                rows = n_id
            else:
                if len(positions) < len(n_id):
                    positions = np.empty(len(n_id), dtype=np.int64)
                sent = select_sent(n_id, shared.held, shard.index, shard.count, shard.block_rows, positions)
                rows = n_id[positions[:sent]]
            specs = part_specs(len(rows), meta.feature_dim, shared.wire_dtype)
            y = None
            if shard.owns_batch(batch):
                specs = [wire.spec_of(name, value) for name, value in blueprint.tensors.items()] + specs
                if labels is not None:
                    y = np.take(labels, n_id)
                    specs.append(wire.TensorSpec("y", compact.label_dtype(y), y.shape))
            pending = wire.write_frame(
                shared.frames.slot(batch),
                wire.Kind.BATCH,
                blueprint.epoch,
                batch,
                batch,
                specs,
                header_checksum_only=checksum_header,
            )
            if shard.owns_batch(batch):
                for name, value in blueprint.tensors.items():
                    pending.views[name][...] = value
                if y is not None:
                    pending.views["y"][...] = y
            before = volume.stats.snapshot() if volume is not None else None
            if convert:
                if len(scratch) < len(rows):
                    scratch = np.empty((len(rows), meta.feature_dim), dtype=meta.feature_dtype)
                counters = shared.cache.gather(rows, scratch, volume)
                to_wire(scratch[: len(rows)], pending.views["x"])
            else:
                counters = shared.cache.gather(rows, pending.views["x"], volume)
            if volume is not None and before is not None:
                read = volume.stats.since(before)
                row[STAT_VOLUME_BYTES] += read.bytes_read
                row[STAT_VOLUME_REQUESTS] += read.requests
                row[STAT_VOLUME_IO] += read.io_seconds
                row[STAT_VOLUME_THROTTLED] += read.throttled_seconds
            row[STAT_BYTES_SENT] += pending.seal()
            row[STAT_HITS] += counters.hits
            row[STAT_MISSES] += counters.misses
            row[STAT_ROWS_SENT] += len(rows)
            row[STAT_BATCHES] += 1
            row[STAT_BUSY] += time.perf_counter() - started
            shared.ready[batch % len(shared.ready)].release()
    except BaseException:
        _fail(shared, f"vector loader {worker}")
    finally:
        if volume is not None:
            volume.close()
