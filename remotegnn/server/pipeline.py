"""The memory server's pipeline on the learner's host: sequencer -> batch creators -> blueprint
queue -> vector loaders -> shared-memory frame ring -> the learner (the local transport).

The learner side drives it: ``start_epoch`` writes the epoch's seed order and hands out the first
``ring_slots`` batches (from ``first`` on, for an epoch resumed part-way: batch b's draws depend
only on the seed, the epoch and b, so the batches are those an uninterrupted epoch has);
``frame(b)`` waits for batch b (in order) with a deadline and a health check; ``release(b)``
frees its slot and hands out batch b+slots. That credit scheme bounds every queue (backpressure)
and keeps slot b % slots free for batch b by construction.

The MPI server (``remotegnn.mpi.server``) drives the same pipeline as one feature shard of
several: it samples only the batches its shard owns, is handed the others' blueprints
(``awaiting`` / ``blueprint_arrived``), forwards its own (``sampled``), and polls frames
without blocking (``poll_frame``) so one thread can serve MPI and the pipeline together.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
import weakref

import numpy as np

from contracts.stats import PipelineStats, StageStats, VolumeCounters
from foundation.errors import MemoryBridgeError, UsageError
from remotegnn import wire
from remotegnn.cache.learner import LearnerCache, Received, read_rows
from remotegnn.server.caches import build_caches
from remotegnn.server.control import IndexQueue
from remotegnn.server.options import PipelineOptions
from remotegnn.server.ring import SharedRing, batch_bounds, batch_specs, slot_bytes, structure_specs
from remotegnn.server.seeds import SeedSource, batch_count, epoch_order, learner_share
from remotegnn.server.shard import Shard
from remotegnn.server.stages import (
    ERROR_SLOT_BYTES,
    ORDER_COLUMN_BYTES,
    ORDER_DTYPE,
    ORDER_ROWS,
    POLL_S,
    STAT_BATCHES,
    STAT_BUSY,
    STAT_BYTES_SENT,
    STAT_DTYPE,
    STAT_FIELDS,
    STAT_HITS,
    STAT_MISSES,
    STAT_ROWS_SENT,
    STAT_STALL,
    STAT_VOLUME_BYTES,
    STAT_VOLUME_IO,
    STAT_VOLUME_REQUESTS,
    STAT_VOLUME_THROTTLED,
    Shared,
    batch_creator,
    vector_loader,
)
from remotegnn.store import GraphDataset

JOIN_S = 2.0
NO_ROW_CACHES = {"cache_bytes": 0, "cache_policy": "none", "learner_cache_bytes": 0, "device_cache_bytes": 0}
"""A pipeline that sends no feature rows caches none."""


class PipelineError(MemoryBridgeError):
    """The pipeline failed or stalled: a worker died, raised, or no batch came within the timeout."""


def _shutdown(processes: list, stop, rings: list[SharedRing]) -> None:
    """Stop every worker (politely, then by force) and unmap the rings; safe to call twice."""
    _stop_workers(processes, stop)
    for ring in rings:
        ring.close()


def _stop_workers(processes: list, stop) -> None:
    stop.set()
    deadline = time.monotonic() + JOIN_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(JOIN_S)


class LocalPipeline:
    """Batches built around ``seeds`` (input nodes, or supervision edges for link prediction) by
    worker processes and read in order from shared memory.

    ``learner`` picks this learner rank's slice of every epoch's items, ``shard`` this memory
    rank's feature rows (see ``shard.py``). ``fills_learner``: this process is the learner, so it
    fills the learner cache itself (the MPI server sends its rows instead, see ``caches``).
    ``feature_rows=False``: a learner that samples its own batches over MPI; its frames hold the
    structure and labels a memory rank's would, and no feature row (the memory ranks send those).

    Seeds are the user's node ids; the frames' ``n_id`` are stored positions, which differ on a
    reordered dataset (the learner maps them back through ``GraphDataset.user_ids``)."""

    def __init__(
        self,
        dataset: GraphDataset,
        seeds: SeedSource,
        options: PipelineOptions,
        *,
        volume_limits=None,
        learner: Shard = Shard(),
        shard: Shard = Shard(),
        fills_learner: bool = True,
        feature_rows: bool = True,
    ):
        if not feature_rows:  # no cache of rows it never reads
            options = options.model_copy(update=NO_ROW_CACHES)
        self.dataset, self.options, self.seeds = dataset, options, seeds
        meta = dataset.meta
        seeds.check(meta.num_nodes)
        self.learner, self.shard, self.fills_learner = learner, shard, fills_learner
        self.num_batches = batch_count(learner_share(seeds.items, learner), options.batch_size, options.drop_last)
        size = seeds.most_seeds(options.batch_size)
        capacity = self.num_batches * size
        ctx = mp.get_context("fork")  # workers inherit the unlinked rings and the cache (ring.py)
        slots, hops = options.ring_slots, len(options.num_neighbors)
        if options.weight_attr is not None and options.weight_attr != meta.edge_weight:
            stored = f"only {meta.edge_weight!r}" if meta.edge_weight else "none"
            raise UsageError(
                f"weight_attr={options.weight_attr!r}: the dataset stores {stored} as edge weights; "
                "convert it with `remotegnn convert --weight-attr NAME` (a PyG Data keeps its edge attributes)"
            )
        if options.type_fanouts is not None and (
            meta.hetero is None or any(len(hop) != len(meta.hetero.edge_types) for hop in options.type_fanouts)
        ):
            raise UsageError("type_fanouts: give one fanout per edge type of a heterogeneous dataset at every hop")
        nodes, edges = batch_bounds(
            options.num_neighbors, size, meta.num_nodes, meta.num_edges, options.replace, options.disjoint
        )
        labels = "labels" in meta.files
        # A memory rank reads its memory cache in the sweep that reads the learner's share (mpi/server.py).
        seed_positions = dataset.to_positions(seeds.cache_seeds)
        self.caches = build_caches(dataset, options, seed_positions, shard, fill_memory=fills_learner)
        self.learner_cache, self.device_rows = (
            LearnerCache.from_parts(
                meta.num_nodes, [(held, read_rows(dataset, held, self.caches.wire_dtype))] if fills_learner else []
            )
            for held in (self.caches.learner_nodes, self.caches.device_nodes)
        )
        rings = [
            SharedRing(slots, slot_bytes(structure_specs(nodes, edges, size, hops, options.edge_ids)), "blueprints"),
            SharedRing(
                slots,
                slot_bytes(
                    batch_specs(
                        nodes, edges, size, hops, meta.feature_dim, self.caches.wire_dtype, labels, options.edge_ids
                    )
                ),
                "frames",
            ),
            SharedRing(1, ERROR_SLOT_BYTES, "errors"),
        ]
        workers = options.batch_creators + options.vector_loaders
        order_bytes = ORDER_COLUMN_BYTES * capacity
        bounds_bytes = ORDER_DTYPE.itemsize * (self.num_batches + 1)
        order = SharedRing(1, max(ORDER_COLUMN_BYTES, order_bytes + bounds_bytes), "order")
        stats = SharedRing(1, STAT_DTYPE.itemsize * STAT_FIELDS * workers, "stats")
        rings += [order, stats]
        self._stop = ctx.Event()
        self._shared = Shared(
            dataset=dataset,
            options=options,
            cache=self.caches.memory,
            held=self.caches.held if feature_rows else np.ones(meta.num_nodes, dtype=np.bool_),  # all held: none sent
            wire_dtype=self.caches.wire_dtype,
            order=order.slot(0)[:order_bytes].view(ORDER_DTYPE).reshape(ORDER_ROWS, capacity),
            bounds=order.slot(0)[order_bytes : order_bytes + bounds_bytes].view(ORDER_DTYPE),
            control=ctx.Array("q", 2, lock=False),
            blueprints=rings[0],
            frames=rings[1],
            errors=rings[2],
            tasks=IndexQueue(ctx, slots + workers),
            built=IndexQueue(ctx, slots),
            ready=[ctx.Semaphore(0) for _ in range(slots)],
            stop=self._stop,
            failed=ctx.Event(),
            stats=stats.slot(0).view(STAT_DTYPE).reshape(workers, STAT_FIELDS),
            parent=mp.current_process().pid or 0,
            shard=shard,
            sampled=None if shard.whole else [ctx.Semaphore(0) for _ in range(slots)],
        )
        self._start_workers(ctx, volume_limits, rings)
        self._lock = threading.Lock()
        self.epoch = -1
        self._dispatched = self._received = self._released = self._first = 0
        self._limit = 0  # batches of this epoch that may be handed out
        self.awaiting: list[int] = []  # dispatched batches whose blueprint another rank samples
        self._started = time.perf_counter()
        self.learner_stall_s = 0.0

    def _start_workers(self, ctx, volume_limits, rings: list[SharedRing]) -> None:
        """Fork the batch creators and the vector loaders over the shared state; they stop when the
        pipeline closes or is collected (``_shutdown``), which also unlinks ``rings``."""
        options = self.options
        self._processes = [
            ctx.Process(target=batch_creator, args=(self._shared, i), daemon=True, name=f"remotegnn batch creator {i}")
            for i in range(options.batch_creators)
        ]
        self._processes += [
            ctx.Process(
                target=vector_loader,
                args=(self._shared, options.batch_creators + i, volume_limits),
                daemon=True,
                name=f"remotegnn vector loader {i}",
            )
            for i in range(options.vector_loaders)
        ]
        self._finalizer = weakref.finalize(self, _shutdown, self._processes, self._stop, rings)
        for process in self._processes:
            process.start()

    # -- epochs -----------------------------------------------------------------------------------
    def start_epoch(self, epoch: int, limit: int | None = None, first: int = 0) -> int:
        """Begin ``epoch`` at batch ``first`` (finishing any batches an abandoned epoch left in
        flight); returns the number of batches in the whole epoch. ``limit`` holds back batches
        from that one on until ``allow`` (the MPI server hands out only what the learner has room
        for)."""
        self._check_open()
        if not 0 <= first <= self.num_batches:
            raise UsageError(f"first batch {first}: the epoch has batches 0 to {self.num_batches - 1}")
        while self._received < self._dispatched:
            self.frame(self._received)
        shared = self._shared
        options = self.options
        positions = epoch_order(self.seeds.items, options.seed, epoch, options.shuffle, self.learner)
        plan = self.seeds.plan(options.batch_size, options.drop_last, positions, (options.seed, epoch))
        shared.order[0, : plan.order.shape[1]] = self.dataset.to_positions(plan.order[0])  # where the seeds are stored
        shared.order[1, : plan.order.shape[1]] = plan.order[1]
        shared.bounds[:] = plan.bounds
        shared.control[0], shared.control[1] = epoch, plan.order.shape[1]
        shared.stats[:] = 0
        self.learner_cache.hits = 0
        self.epoch, self._first = epoch, first
        self._dispatched = self._received = self._released = self._limit = first
        self._started, self.learner_stall_s = time.perf_counter(), 0.0
        self.allow(self.num_batches if limit is None else limit)
        return self.num_batches

    def allow(self, upto: int) -> None:
        """Let batches below ``upto`` be handed out, each once the slot it needs is free."""
        with self._lock:
            self._limit = min(max(upto, self._limit), self.num_batches)
            while self._dispatched < min(self._limit, self._released + self.options.ring_slots):
                if self.shard.owns_batch(self._dispatched):
                    self._shared.tasks.put(self._dispatched)
                else:
                    self.awaiting.append(self._dispatched)
                self._dispatched += 1

    @property
    def pending(self) -> int:
        """Batches handed out and not yet read."""
        return self._dispatched - self._received

    # -- what the MPI server adds -----------------------------------------------------------------
    @property
    def frame_slot_bytes(self) -> int:
        """The largest frame this pipeline writes."""
        return self._shared.frames.slot_size

    def frame_slot(self, batch: int) -> np.ndarray:
        """The bytes of ``batch``'s frame slot (what the MPI server sends)."""
        return self._shared.frames.slot(batch)

    def blueprint_slot(self, batch: int) -> np.ndarray:
        """Where another rank's blueprint of ``batch`` is received (then ``blueprint_arrived``)."""
        return self._shared.blueprints.slot(batch)

    def blueprint_arrived(self, batch: int) -> None:
        self._shared.built.put(batch)

    def sampled(self, batch: int) -> bool:
        """Whether this shard's blueprint of ``batch`` is ready to forward (call once per batch)."""
        sampled = self._shared.sampled
        assert sampled is not None, "only a pipeline sharded over several memory ranks forwards blueprints"
        return sampled[batch % self.options.ring_slots].acquire(block=False)

    def poll_frame(self, batch: int) -> wire.Frame | None:
        """``frame(batch)`` if it is ready now, else None (raises if a worker failed)."""
        self._check_health()
        if not self._shared.ready[batch % self.options.ring_slots].acquire(block=False):
            return None
        return self._take(batch)

    # -- the learner's side -----------------------------------------------------------------------
    def frame(self, batch: int) -> wire.Frame:
        """Wait for ``batch`` (the next one in order) and return its decoded frame (views of the
        ring slot, valid until ``release(batch)``; ``x`` assembled with the learner cache's rows)."""
        return self.received(batch).assembled()

    def received(self, batch: int) -> Received:
        """Wait for ``batch`` (the next one in order): its frame as it arrived, ``x`` holding only
        the rows the learner does not (the learner assembles the rest, see ``Received``)."""
        frame = self.next_frame(batch)
        try:
            return Received(frame, [frame["x"]], self.learner_cache)
        except wire.FrameError as exc:
            self.close()
            raise PipelineError(f"batch {batch}: {exc}") from exc

    def next_frame(self, batch: int) -> wire.Frame:
        """Wait for ``batch`` (the next one in order): its frame as written (views of the ring slot)."""
        self._check_health()  # a dead worker fails the epoch at once, even while others keep up
        ready = self._shared.ready[batch % self.options.ring_slots]
        started = time.perf_counter()
        deadline = started + self.options.timeout_s
        while not ready.acquire(timeout=POLL_S):
            self._check_health()
            if time.perf_counter() > deadline:
                self.close()
                raise PipelineError(
                    f"no batch {batch} of epoch {self.epoch} within {self.options.timeout_s:g}s "
                    "(timeout_s): the server stalled; every worker was stopped"
                )
        self.learner_stall_s += time.perf_counter() - started
        return self._take(batch)

    def _take(self, batch: int) -> wire.Frame:
        if batch != self._received:
            raise UsageError(f"batches are read in order: expected batch {self._received}, not {batch}")
        self._received += 1
        try:
            frame = wire.decode(self._shared.frames.slot(batch))
        except wire.FrameError as exc:
            self.close()
            raise PipelineError(f"batch {batch}: {exc}") from exc
        if (frame.epoch, frame.batch) != (self.epoch, batch):
            self.close()
            raise PipelineError(
                f"slot held batch {frame.batch} of epoch {frame.epoch}, expected {batch} of {self.epoch}"
            )
        return frame

    def release(self, batch: int) -> None:
        """The learner is done with ``batch``: its slot may be reused, the next batch starts."""
        with self._lock:
            self._released += 1
        self.allow(self._limit)

    # -- health and stats -----------------------------------------------------------------------
    def _check_health(self) -> None:
        self._check_open()
        shared = self._shared
        if shared.failed.is_set():
            message = wire.decode(shared.errors.slot(0)).text()
            self.close()
            raise PipelineError(message)
        for process in self._processes:
            if process.exitcode is not None:
                self.close()
                raise PipelineError(
                    f"{process.name} (pid {process.pid}) exited with code {process.exitcode} "
                    f"during epoch {self.epoch}; every worker was stopped"
                )

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise PipelineError("the pipeline is closed")

    def stats(self) -> PipelineStats:
        """Counters of the current epoch so far (the whole epoch once it is consumed)."""
        table = self._shared.stats.copy()
        creators, options = table[: self.options.batch_creators], self.options
        loaders = table[options.batch_creators :]
        seconds = time.perf_counter() - self._started
        hits, misses = int(loaders[:, STAT_HITS].sum()), int(loaders[:, STAT_MISSES].sum())

        def stage(rows: np.ndarray) -> StageStats:
            return StageStats(
                processes=len(rows),
                batches=int(rows[:, STAT_BATCHES].sum()),
                busy_s=float(rows[:, STAT_BUSY].sum()),
                stall_s=float(rows[:, STAT_STALL].sum()),
            )

        stats = PipelineStats(
            epoch=self.epoch,
            batches=self._received - self._first,
            seconds=seconds,
            batches_per_s=(self._received - self._first) / seconds if seconds > 0 else 0.0,
            batch_creators=stage(creators),
            vector_loaders=stage(loaders),
            blueprint_queue_depth=self._shared.built.depth(),
            ready_frames=sum(1 for s in self._shared.ready if s.get_value() > 0),
            cache_hits=hits,
            cache_misses=misses,
            cache_hit_rate=hits / (hits + misses) if hits + misses else 0.0,
            rows_sent=int(loaders[:, STAT_ROWS_SENT].sum()),
            bytes_sent=int(loaders[:, STAT_BYTES_SENT].sum()),
            volume=VolumeCounters(
                bytes=int(loaders[:, STAT_VOLUME_BYTES].sum()),
                requests=int(loaders[:, STAT_VOLUME_REQUESTS].sum()),
                io_s=float(loaders[:, STAT_VOLUME_IO].sum()),
                throttled_s=float(loaders[:, STAT_VOLUME_THROTTLED].sum()),
            ),
        )
        # A memory rank's pipeline does not fill the learner's cache and never sees its waits.
        return stats.with_learner(self.learner_cache.hits, self.learner_stall_s) if self.fills_learner else stats

    @property
    def pids(self) -> list[int]:
        pids: list[int] = []
        for process in self._processes:
            assert process.pid is not None  # every worker is started in __init__
            pids.append(process.pid)
        return pids

    def close(self) -> None:
        """Stop every worker and free the shared memory (also done when garbage collected)."""
        self._finalizer()

    def stop(self) -> None:
        """Stop every worker but keep the shared memory mapped: an MPI send may still be reading
        a frame out of it (``close`` frees it later)."""
        _stop_workers(self._processes, self._stop)

    def __enter__(self) -> LocalPipeline:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
