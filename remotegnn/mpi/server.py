"""A memory rank (``remotegnn serve`` under ``remotegnn launch``): one event loop that answers
learners' requests and drives one pipeline per learner session, moving bytes with nonblocking
buffer-based MPI calls straight out of (and into) the pipeline's shared-memory slots.

Per session and epoch: the learner credits batches (it has a receive buffer posted for each);
the pipeline hands out only credited batches, so when a learner abandons an epoch every memory
rank has handed out, and will send, exactly the credited ones - no batch is orphaned half-way
between ranks. With several memory ranks, the owner of batch b (b % ranks) forwards its
sampled blueprint to the others, and each rank sends the learner its own feature rows (shard.py).
When the learner samples (``Open.sampling``), no rank owns a batch: the learner sends each rank
every batch's ids of its rows where the owner's blueprint would come from, and each rank sends
those rows alone.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field

from contracts.shards import DEFAULT_LAYOUT, ShardLayout, ShardLayoutName
from foundation.models import StrictModel
from remotegnn import wire
from remotegnn.cache.learner import nodes_digest
from remotegnn.mpi.leave import LEAVE_S
from remotegnn.mpi.messages import (
    BLUEPRINT,
    CONTROL_TAG,
    DATA,
    REPLY,
    USER_IDS,
    Bye,
    Close,
    Credit,
    Describe,
    Described,
    Epoch,
    LearnerRows,
    Open,
    Opened,
    pack,
    session_tag,
    text_frame,
    unpack_request,
)
from remotegnn.mpi.world import World, import_mpi
from remotegnn.server import LocalPipeline, PipelineOptions
from remotegnn.server.seeds import seeds_from_arrays
from remotegnn.server.shard import Shard, check_staged
from remotegnn.server.startup import chunk_rows, fill_chunks, read_memory_cache, sweep
from remotegnn.store import GraphDataset

if TYPE_CHECKING:
    from mpi4py import MPI

log = logging.getLogger(__name__)

IDLE_MIN_S, IDLE_MAX_S = 50e-6, 2e-3  # the loop's back-off while nothing moves
IDLE_NO_SESSION_S = 0.05  # and with no session open: only a request can come, and 50 ms is no delay for it


class ServeConfig(StrictModel):
    """What ``remotegnn serve`` was started with: the default dataset and this machine's
    resources, which apply unless a learner's loader sets them explicitly."""

    dataset: Path | None = None
    defaults: dict = Field(default_factory=dict, description="PipelineOptions fields (cache, process counts)")
    volume: dict | None = Field(None, description="VolumeLimits fields: emulate a cloud volume for misses")
    stats_every_s: float = Field(10.0, gt=0, description="period of the stats line on stderr")
    layout: ShardLayoutName = Field(DEFAULT_LAYOUT, description="how rows are dealt to memory ranks (contracts.shards)")


class _Sends:
    """Nonblocking sends whose buffers must stay alive until they complete."""

    def __init__(self):
        self._pending: list[tuple[MPI.Request, np.ndarray]] = []

    def add(self, request: MPI.Request, buf: np.ndarray) -> None:
        self._pending.append((request, buf))

    def progress(self) -> None:
        self._pending = [(r, b) for r, b in self._pending if not r.Test()]


class Session:
    """One loader of one learner: its pipeline and the epoch's send/receive state."""

    def __init__(
        self, server: MemoryServer, learner: int, request: Open, dataset: GraphDataset, arrays: dict[str, np.ndarray]
    ):
        started = time.perf_counter()
        world, self.MPI = server.world, server.MPI
        self.comm, self.server = world.comm, server
        self.dest = world.learner_rank(learner)
        learner_samples = request.sampling == "learner"
        meta = dataset.meta
        self.layout = ShardLayout.of(server.config.layout, world.memory_ranks, meta.num_nodes, meta.row_bytes)
        check_staged(dataset, self.layout, world.rank)
        self.shard = Shard(
            index=world.rank,
            count=world.memory_ranks,
            block_rows=self.layout.block_rows,
            learner_samples=learner_samples,
        )
        # the ranks this one forwards its blueprints to (none when the learner samples every batch)
        self.peers = [] if learner_samples else [r for r in range(world.memory_ranks) if r != world.rank]
        self.data_tag, self.reply_tag, self.blueprint_tag = (
            session_tag(learner, request.session, c) for c in (DATA, REPLY, BLUEPRINT)
        )
        options = PipelineOptions(**{**server.config.defaults, **request.options})
        volume = None
        if server.config.volume is not None:
            from remotegnn.volume import VolumeLimits

            volume = VolumeLimits(**server.config.volume)
        self.pipeline = LocalPipeline(
            dataset,
            seeds_from_arrays(arrays, options, dataset.meta.num_nodes),
            options,
            volume_limits=volume,
            learner=Shard(index=request.learner, count=request.learners),
            shard=self.shard,
            fills_learner=False,
        )
        self.dataset = dataset
        own, row_bytes = self._own_nodes(), dataset.meta.feature_dim * self.pipeline.caches.wire_dtype.itemsize
        self.fill_chunks = fill_chunks(own["device"], own["ram"], chunk_rows(row_bytes))
        self.fill: Iterator[np.ndarray] | None = self._fill_frames()
        self.filling: tuple[MPI.Request, np.ndarray] | None = None  # the fill chunk being sent: (request, buffer)
        self.name = f"learner {learner} session {request.session}"
        # Start-up is most of a short job on a large graph: say where its time goes.
        to_send = sum(len(nodes) for _, nodes in self.fill_chunks)
        server.say(
            f"{self.name}: caches chosen in {time.perf_counter() - started:.1f}s"
            + (f"; reading and sending {to_send:,} learner cache rows" if to_send else "")
        )
        self.fill_started, self.fill_rows = time.perf_counter(), to_send
        self.epoch, self.count, self.credit, self.next_send = -1, 0, 0, 0
        self.next_forward = 0
        self.sends: deque[tuple[int, MPI.Request]] = deque()  # (batch, request) to the learner, in order
        self.forwards: dict[int, list[MPI.Request]] = {}  # batch -> blueprint sends to the other memory ranks
        self.receives: dict[int, MPI.Request] = {}  # batch -> blueprint receive from its owner
        self.queued: deque[Epoch | Close] = deque()  # Epoch/Close requests waiting for the epoch in flight
        self.closed = False
        self.last_line = time.monotonic()

    # -- opening: the answer, then this rank's share of the learner cache --------------------------
    def _own_nodes(self) -> dict[str, np.ndarray]:
        """This rank's share of each of the learner's tiers."""
        caches = self.pipeline.caches
        return {"device": self.shard.own_nodes(caches.device_nodes), "ram": self.shard.own_nodes(caches.learner_nodes)}

    def opened(self) -> np.ndarray:
        """The Opened answer (the LearnerRows chunks follow from ``progress``; with none to send,
        the memory cache is read now)."""
        caches = self.pipeline.caches
        if not self.fill_chunks:
            read_memory_cache(self.dataset, caches.memory)  # nothing to send: read it now
        return pack(
            Opened(
                num_batches=self.pipeline.num_batches,
                slot_bytes=self.pipeline.frame_slot_bytes,
                caches=caches.report.model_dump(),
                learner_nodes=len(caches.learner_nodes),
                learner_digest=nodes_digest(caches.learner_nodes),
                device_nodes=len(caches.device_nodes),
                device_digest=nodes_digest(caches.device_nodes),
                fill_frames=len(self.fill_chunks),
                layout=self.layout.layout,
                block_rows=self.layout.block_rows,
            )
        )

    def _fill_frames(self) -> Iterator[np.ndarray]:
        """LearnerRows frames of this rank's rows of each tier, read (with the memory cache's, in
        one sweep: ``startup.py``) and converted one at a time."""
        parts = {"device": 0, "ram": 0}
        caches = self.pipeline.caches
        for tier, nodes, rows in sweep(self.dataset, caches.memory, self.fill_chunks, caches.wire_dtype):
            yield pack(LearnerRows(part=parts[tier], tier=tier), {"nodes": nodes, "rows": rows})
            parts[tier] += 1

    def _send_fill(self) -> bool:
        """Send the next fill chunk once the previous one is out."""
        if self.filling is not None:
            if not self.filling[0].Test():
                return False
            self.filling = None
        buf = None if self.fill is None else next(self.fill, None)
        if buf is None:
            self.fill = None
            if self.fill_rows:
                seconds = time.perf_counter() - self.fill_started
                self.server.say(f"{self.name}: {self.fill_rows:,} learner cache rows read and sent in {seconds:.1f}s")
            return False
        self.filling = (self.comm.Isend([buf, self.MPI.BYTE], dest=self.dest, tag=self.reply_tag), buf)
        return True

    # -- requests ----------------------------------------------------------------------------------
    def request(self, message: Epoch | Credit | Close) -> None:
        if isinstance(message, Credit):
            self.credit = max(self.credit, message.upto)
            self.pipeline.allow(self.credit)
        else:  # Epoch or Close: only once the batches credited so far are out
            self.queued.append(message)

    def _quiet(self) -> bool:
        return (
            self.next_send >= min(self.credit, self.count)
            and not self.sends
            and not self.forwards
            and not self.receives
            and self.pipeline.pending == 0
        )

    def _next_request(self) -> None:
        message = self.queued.popleft()
        if isinstance(message, Close):
            self.close()
            return
        first = message.first
        self.epoch, self.credit, self.next_send = message.epoch, message.credit, first
        self.count = self.pipeline.start_epoch(message.epoch, limit=message.credit, first=first)
        self.next_forward = first + (self.shard.index - first) % self.shard.count  # its first own batch

    # -- the loop's work ---------------------------------------------------------------------------
    def progress(self) -> bool:
        """Move whatever can move without blocking; True if anything did."""
        if self.closed:
            return False
        if self.fill is not None or self.filling is not None:
            return self._send_fill()
        if self.queued and self._quiet():
            self._next_request()
            return True
        moved = self._blueprints() | self._frames() | self._completions()
        if time.monotonic() - self.last_line > self.server.config.stats_every_s and self.count:
            self.server.say(f"{self.name}: {self.pipeline.stats().line()}")
            self.last_line = time.monotonic()
        return moved

    def _blueprints(self) -> bool:
        moved = False
        pipeline, MPI = self.pipeline, self.MPI
        while pipeline.awaiting:  # another rank (or the learner) samples these: receive straight into the slot
            batch = pipeline.awaiting.pop(0)
            self.receives[batch] = self.comm.Irecv(
                [pipeline.blueprint_slot(batch), MPI.BYTE], source=self._sampler(batch), tag=self.blueprint_tag
            )
        for batch in [b for b, r in self.receives.items() if r.Test()]:
            del self.receives[batch]
            pipeline.blueprint_arrived(batch)
            moved = True
        while self.peers and self.next_forward < self.count and pipeline.sampled(self.next_forward):
            slot = pipeline.blueprint_slot(self.next_forward)
            size = wire.decode(slot).nbytes
            self.forwards[self.next_forward] = [
                self.comm.Isend([slot[:size], MPI.BYTE], dest=peer, tag=self.blueprint_tag) for peer in self.peers
            ]
            self.next_forward += self.shard.count
            moved = True
        return moved

    def _sampler(self, batch: int) -> int:
        """The rank that sends this one ``batch``'s blueprint: its owner, or the learner that samples."""
        return self.dest if self.shard.learner_samples else self.shard.owner(batch)

    def _frames(self) -> bool:
        moved = False
        while self.next_send < min(self.credit, self.count):
            frame = self.pipeline.poll_frame(self.next_send)
            if frame is None:
                break
            slot = self.pipeline.frame_slot(self.next_send)
            request = self.comm.Isend([slot[: frame.nbytes], self.MPI.BYTE], dest=self.dest, tag=self.data_tag)
            self.sends.append((self.next_send, request))
            self.next_send += 1
            moved = True
        return moved

    def _completions(self) -> bool:
        moved = False
        while self.sends and self.sends[0][1].Test():
            batch = self.sends[0][0]
            if self.peers and self.shard.owns_batch(batch) and batch >= self.next_forward:
                break  # its blueprint is not forwarded yet: the slot must not be reused
            if not all(r.Test() for r in self.forwards.get(batch, [])):
                break
            self.forwards.pop(batch, None)
            self.sends.popleft()
            self.pipeline.release(batch)  # its slots may take batch + ring_slots
            moved = True
            if batch == self.count - 1:
                self._end_epoch()
        return moved

    def _end_epoch(self) -> None:
        stats = self.pipeline.stats()
        self.server.say(f"{self.name}: {stats.line()}")
        self.server.reply(self.dest, self.reply_tag, text_frame(wire.Kind.END, stats.model_dump_json(), self.epoch))

    def fail(self, message: str) -> None:
        """Tell the learner what went wrong and stop this session."""
        self.server.reply(self.dest, self.reply_tag, text_frame(wire.Kind.ERROR, message, self.epoch))
        self.close()

    def close(self) -> None:
        """Stop this session. Its memory is freed at once unless an MPI send still reads from it
        (a learner that left mid-epoch): freeing it then crashed the rank when MPI went on to send
        the rest of a frame, so the server frees it once ``settled``."""
        self.closed = True
        for request in self.receives.values():  # a blueprint that will not come: nothing matches it
            request.Cancel()
            request.Wait()
        self.receives.clear()
        if self._requests():
            self.pipeline.stop()
            self.server.retired.append(self)
        else:
            self.pipeline.close()

    def _requests(self) -> list[MPI.Request]:
        """The sends still in flight out of this session's memory."""
        pending = [request for _, request in self.sends]
        pending += [request for requests in self.forwards.values() for request in requests]
        if self.filling is not None:
            pending.append(self.filling[0])
        return [request for request in pending if not request.Test()]

    def settled(self) -> bool:
        """Whether a closed session's sends are all out; its memory is freed then."""
        if self._requests():
            return False
        self.pipeline.close()
        return True


class MemoryServer:
    """The event loop of one memory rank."""

    def __init__(self, world: World, config: ServeConfig):
        self.world, self.config, self.MPI = world, config, import_mpi()
        self.sessions: dict[tuple[int, int], Session] = {}
        self.datasets: dict[str, GraphDataset] = {}
        self.byes = 0
        self.sends = _Sends()
        self.retired: list[Session] = []  # closed with sends in flight: their memory is kept until those are out

    def say(self, text: str) -> None:
        log.info("memory rank %d: %s", self.world.rank, text)

    def reply(self, dest: int, tag: int, buf: np.ndarray) -> None:
        self.sends.add(self.world.comm.Isend([buf, self.MPI.BYTE], dest=dest, tag=tag), buf)

    def dataset(self, path: str | None) -> GraphDataset:
        if path is None:
            if self.config.dataset is None:
                raise FileNotFoundError("no dataset: give the loader a dataset path, or `remotegnn launch --dataset`")
            path = str(self.config.dataset)
        if path not in self.datasets:
            self.datasets[path] = GraphDataset.open(path)
        return self.datasets[path]

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> None:
        """Serve until every learner has said goodbye."""
        MPI, comm = self.MPI, self.world.comm
        status = MPI.Status()
        idle = IDLE_MIN_S
        self.say(
            f"serving {self.config.dataset or '(datasets named by the learners)'} to "
            f"{self.world.learners} learner rank(s)"
        )
        try:
            while self.byes < self.world.learners:
                moved = False
                while comm.Iprobe(source=MPI.ANY_SOURCE, tag=CONTROL_TAG, status=status):
                    buf = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
                    comm.Recv([buf, MPI.BYTE], source=status.Get_source(), tag=CONTROL_TAG)
                    self.handle(status.Get_source(), buf)
                    moved = True
                for key, session in list(self.sessions.items()):
                    try:
                        moved |= session.progress()
                    except Exception as exc:  # a worker died or failed: the learner hears why
                        session.fail(f"memory rank {self.world.rank}, {session.name}: {exc}")
                    if session.closed:
                        del self.sessions[key]
                self.sends.progress()
                self.retired = [session for session in self.retired if not session.settled()]
                idle = IDLE_MIN_S if moved else min(idle * 2, IDLE_MAX_S if self.sessions else IDLE_NO_SESSION_S)
                if not moved:
                    time.sleep(idle)
        finally:
            for session in self.sessions.values():
                session.close()

    def settle(self, limit_s: float) -> bool:
        """Wait up to ``limit_s`` for the sends of closed sessions to complete; whether they did."""
        deadline = time.monotonic() + limit_s
        while True:
            self.sends.progress()
            self.retired = [session for session in self.retired if not session.settled()]
            if not self.retired or time.monotonic() > deadline:
                return not self.retired
            time.sleep(IDLE_MIN_S)

    def handle(self, source: int, buf: np.ndarray) -> None:
        message, frame = unpack_request(buf)
        learner = source - self.world.memory_ranks
        if isinstance(message, Bye):
            for key in [k for k in self.sessions if k[0] == learner]:
                self.sessions.pop(key).close()
            self.byes += 1
            return
        key = (learner, message.session)
        reply_tag = session_tag(learner, message.session, REPLY)
        try:
            if isinstance(message, Describe):
                dataset = self.dataset(message.dataset)
                arrays = {f"split_{name}": dataset.user_split(name) for name in dataset.meta.splits}
                if dataset.user_ids is not None:
                    arrays[USER_IDS] = np.asarray(dataset.user_ids, dtype=np.int64)
                self.reply(
                    source,
                    reply_tag,
                    pack(
                        Described(
                            meta=dataset.meta.model_dump(mode="json"),
                            path=str(dataset.path),
                            splits=list(dataset.meta.splits),
                        ),
                        arrays,
                    ),
                )
            elif isinstance(message, Open):
                session = Session(
                    self,
                    learner,
                    message,
                    self.dataset(message.dataset),
                    {k: np.array(frame[k]) for k in frame.tensors},
                )
                self.sessions[key] = session
                self.reply(source, reply_tag, session.opened())
            elif key in self.sessions:
                self.sessions[key].request(message)
        except Exception as exc:  # a bad dataset path or options: the learner raises it
            self.reply(source, reply_tag, text_frame(wire.Kind.ERROR, f"memory rank {self.world.rank}: {exc}"))


def serve(world: World, config: ServeConfig) -> None:
    """Serve until every learner has left, then finalize MPI while every buffer it may still
    read is mapped (the pipelines' memory is freed after, at exit)."""
    server = MemoryServer(world, config)
    server.run()
    if not server.settle(LEAVE_S):
        server.say(f"{len(server.retired)} closed session(s) still had sends in flight after {LEAVE_S:g}s")
    server.MPI.Finalize()
