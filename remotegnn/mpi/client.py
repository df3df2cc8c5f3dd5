"""The learner's side of the MPI transport: ``MpiSource`` has the same interface as
``LocalPipeline`` (``start_epoch``, ``frame``, ``release``, ``stats``, ``close``), so
``DistributedGraphLoader`` does not care where its batches come from.

Each memory rank gets ``buffers`` posted receives per session, one per credited batch, into
reused buffers (so receiving allocates nothing). With one memory rank and no learner cache a
frame is handed out as zero-copy views of its buffer; otherwise the owner's structure, the
learner cache's rows and every rank's feature rows are assembled into one batch. The learner
cache is filled when the session opens: each memory rank sends its share after its answer.
Waiting polls ``Test`` (which also drives MPI's progress over TCP) with a deadline, and a
server's ERROR frame is raised as a PipelineError. A learner that samples its own batches uses
``LearnerSampledSource`` (``learner_sampled.py``), which builds on this one.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import TYPE_CHECKING, ClassVar, NoReturn

import numpy as np
from pydantic import BaseModel, ValidationError

from contracts.stats import PipelineStats
from foundation.errors import UsageError
from remotegnn import wire
from remotegnn.cache.learner import LearnerCache, Received
from remotegnn.mpi import leave
from remotegnn.mpi.messages import (
    CONTROL_TAG,
    DATA,
    REPLY,
    USER_IDS,
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
)
from remotegnn.mpi.world import World, import_mpi
from remotegnn.sampling_mode import SamplingMode
from remotegnn.server import PipelineError, PipelineOptions
from remotegnn.server.caches import CacheReport
from remotegnn.server.seeds import SeedSource, seeds_as_arrays
from remotegnn.server.shard import Shard

if TYPE_CHECKING:
    from mpi4py import MPI

POLL_S = 100e-6
SETUP_TIMEOUT_S = 3600.0
"""How long opening a session may take: each memory rank reads its part of the structure and
fills its cache and its share of the learner's from the volume, minutes for a graph of hundreds
of GB at gp3's baseline 125 MB/s (a rank that dies ends the whole MPI job sooner). The loader's
``timeout`` bounds the wait for each batch, not this."""
_sessions = itertools.count()


class MpiSource:
    """Batches of one loader from the job's memory ranks."""

    SAMPLING: ClassVar[SamplingMode] = "memory"

    def __init__(self, world: World, dataset: str | None, *, timeout_s: float):
        self.world, self.MPI, self.timeout_s = world, import_mpi(), timeout_s
        leave.track(self)
        self.session = next(_sessions)
        learner = world.learner_index
        self.data_tag, self.reply_tag = (session_tag(learner, self.session, c) for c in (DATA, REPLY))
        self.dataset = dataset
        self.ranks = list(range(world.memory_ranks))
        self.shard_count = world.memory_ranks
        # small sends in flight (credits), kept alive until done
        self._requests: list[tuple[MPI.Request, np.ndarray]] = []
        # The loader's receiver thread and training loop both release, and the exit handler withdraws
        # while the receiver thread may still be waiting: each touches the posted receives under it.
        self._lock = threading.Lock()
        self._leaving = False
        self._ends: dict[int, wire.Frame] = {}  # the last END frame of each memory rank
        self.opened = False
        self.failed: str | None = None
        self.epoch = -1
        self.learner_stall_s = 0.0

    # -- messages ----------------------------------------------------------------------------------
    def _send(
        self, message: BaseModel, arrays: dict[str, np.ndarray] | None = None, ranks: list[int] | None = None
    ) -> None:
        buf = pack(message, arrays)
        with self._lock:
            self._requests = [(r, b) for r, b in self._requests if not r.Test()]
            for rank in self.ranks if ranks is None else ranks:
                self._requests.append((self.world.comm.Isend([buf, self.MPI.BYTE], dest=rank, tag=CONTROL_TAG), buf))

    def _reply(self, rank: int, what: str, setup: bool = False) -> wire.Frame:
        """The next reply of ``rank`` on this session. An ERROR frame is raised; an END frame
        (epoch stats) is also kept for ``stats``, since it may come while batches are awaited.
        ``setup``: a reply to opening the session, which may wait up to ``SETUP_TIMEOUT_S``."""
        MPI, comm = self.MPI, self.world.comm
        status = MPI.Status()
        limit = max(self.timeout_s, SETUP_TIMEOUT_S) if setup else self.timeout_s
        deadline = time.monotonic() + limit
        while not comm.Iprobe(source=rank, tag=self.reply_tag, status=status):
            if time.monotonic() > deadline:
                knob = "the setup limit" if setup else "timeout_s"
                raise PipelineError(f"memory rank {rank} sent no {what} within {limit:g}s ({knob})")
            time.sleep(POLL_S)
        buf = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
        comm.Recv([buf, MPI.BYTE], source=rank, tag=self.reply_tag)
        frame = wire.decode(buf)
        if frame.kind == wire.Kind.ERROR:
            self._fail(frame.text())
        if frame.kind == wire.Kind.END:
            self._ends[rank] = frame
        return frame

    def describe(self) -> tuple[dict, dict[str, np.ndarray], np.ndarray | None]:
        """From memory rank 0: the served dataset's meta (as JSON data), its splits as user node
        ids, and a reordered dataset's user id of each stored node (None when in id order)."""
        self._send(Describe(session=self.session, dataset=self.dataset), ranks=[0])
        frame = self._reply(0, "dataset description")
        described = Described.model_validate(json.loads(frame.text("json")))
        self.served = described.path
        user_ids = np.array(frame[USER_IDS]) if USER_IDS in frame.tensors else None
        return described.meta, {name: np.array(frame[f"split_{name}"]) for name in described.splits}, user_ids

    def open(
        self,
        seeds: SeedSource,
        options: PipelineOptions,
        learner: Shard,
        buffers: int,
        num_nodes: int,
    ) -> None:
        """Start this session's pipelines on every memory rank and fill the learner cache."""
        explicit = options.model_dump(include=options.model_fields_set)
        self._send(
            Open(
                session=self.session,
                dataset=self.dataset,
                options=explicit,
                learner=learner.index,
                learners=learner.count,
                sampling=self.SAMPLING,
            ),
            seeds_as_arrays(seeds),
        )
        answers = [self._reply(r, "answer to open", setup=True) for r in self.ranks]
        opened = [Opened.model_validate(json.loads(answer.text("json"))) for answer in answers]
        self.opened = True
        self.caches = [CacheReport.model_validate(o.caches) for o in opened]
        layouts = {(o.layout, o.block_rows) for o in opened}
        if len(layouts) > 1:
            self._fail(f"the memory ranks deal rows differently ({sorted(layouts)}): start them all with one --layout")
        self.block_rows = opened[0].block_rows
        self.learner_cache, self.device_rows = self._fill(opened, num_nodes)
        self.num_batches = opened[0].num_batches
        self.buffers = max(2, buffers)
        self._bufs = [[np.empty(o.slot_bytes, dtype=np.uint8) for _ in range(self.buffers)] for o in opened]
        self._recvs: dict[int, list[MPI.Request]] = {}
        self._received = self._posted = 0

    def _fill(self, opened: list[Opened], num_nodes: int) -> tuple[LearnerCache, LearnerCache]:
        """The learner's two tiers (RAM, device) from every memory rank's LearnerRows, checked
        against their answers."""
        announced = {(o.learner_nodes, o.learner_digest, o.device_nodes, o.device_digest) for o in opened}
        if len(announced) > 1:
            self._fail("the memory ranks chose different learner caches (are they serving the same dataset?)")
        counts = {"ram": opened[0].learner_nodes, "device": opened[0].device_nodes}
        tiers = {tier: LearnerCache.empty() for tier in counts}
        # A frame from each rank in turn: each rank reads its next chunk while the others' are
        # taken, so the ranks read their parts of the file at once rather than one after another.
        remaining = {rank: answer.fill_frames for rank, answer in zip(self.ranks, opened)}
        while any(remaining.values()):
            for rank in [r for r, left in remaining.items() if left]:
                remaining[rank] -= 1
                frame = self._reply(rank, "learner cache rows", setup=True)
                try:
                    tier = LearnerRows.model_validate_json(frame.text("json")).tier
                except ValidationError as exc:
                    self._fail(f"memory rank {rank} sent a malformed LearnerRows message: {exc}")
                nodes, rows = frame["nodes"], frame["rows"]
                if tiers[tier].size == 0:
                    tiers[tier] = LearnerCache.allocate(num_nodes, counts[tier], rows.shape[1], rows.dtype)
                try:
                    tiers[tier].add(nodes, rows)  # copied out of the frame's buffer, which goes with the frame
                except wire.FrameError as exc:
                    self._fail(f"memory rank {rank}: {exc}")
        digests = {"ram": opened[0].learner_digest, "device": opened[0].device_digest}
        for name, cache in tiers.items():
            if cache.filled != counts[name] or (counts[name] and cache.digest() != digests[name]):
                self._fail(f"the learner's {name} tier arrived with {cache.filled} rows, not {counts[name]}")
        return tiers["ram"], tiers["device"]

    def _fail(self, message: str) -> NoReturn:
        """The session is dead: withdraw the posted receives (nothing will match them) and raise."""
        self.failed = message
        self._cancel()
        raise PipelineError(message)

    def _cancel(self) -> None:
        for requests in getattr(self, "_recvs", {}).values():
            for request in requests:
                if request:  # not completed (a completed one is MPI.REQUEST_NULL)
                    request.Cancel()
                    request.Wait()
        self._recvs = {}
        self._received = self._posted = 0

    def withdraw(self, deadline: float) -> None:
        """Before this learner leaves: let the batches already on their way arrive (the memory
        ranks send exactly those credited) until ``deadline``, then cancel what has not. From
        here on the receiver thread posts, credits and waits for nothing more."""
        with self._lock:
            self._leaving = True
        pending = [request for requests in getattr(self, "_recvs", {}).values() for request in requests]
        while pending and not self.MPI.Request.Testall(pending) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        self._cancel()

    # -- epochs ------------------------------------------------------------------------------------
    def _post(self, batch: int) -> None:
        self._recvs[batch] = [
            self.world.comm.Irecv([bufs[batch % self.buffers], self.MPI.BYTE], source=rank, tag=self.data_tag)
            for rank, bufs in zip(self.ranks, self._bufs)
        ]
        self._posted = batch + 1

    def _drain(self) -> None:
        """Receive (and drop) what an abandoned epoch still has on its way."""
        while self._received < self._posted:
            self._wait(self._received)
            self._received += 1
        self._recvs.clear()

    def start_epoch(self, epoch: int, first: int = 0) -> int:
        """Begin ``epoch`` at batch ``first``; returns the number of batches in the whole epoch."""
        if self.failed:
            raise PipelineError(self.failed)
        if not 0 <= first <= self.num_batches:
            raise UsageError(f"first batch {first}: the epoch has batches 0 to {self.num_batches - 1}")
        self._drain()
        self.epoch, self._received, self._posted = epoch, first, first
        self.learner_stall_s, self._started = 0.0, time.perf_counter()
        self.learner_cache.hits = 0
        upto = min(first + self.buffers, self.num_batches)
        for batch in range(first, upto):
            self._post(batch)
        self._send(Epoch(session=self.session, epoch=epoch, credit=upto, first=first))
        return self.num_batches

    def _wait(self, batch: int) -> None:
        requests = self._recvs[batch]
        deadline = time.monotonic() + self.timeout_s
        MPI = self.MPI
        while True:
            with self._lock:
                if self._leaving:
                    raise PipelineError("this learner is leaving the job: no more batches")
                if MPI.Request.Testall(requests):
                    del self._recvs[batch]
                    return
            for rank in self.ranks:  # a failed server says why on the reply tag
                if self.world.comm.Iprobe(source=rank, tag=self.reply_tag):
                    self._reply(rank, "batch")
            self._meanwhile()
            if time.monotonic() > deadline:
                self._fail(
                    f"no batch {batch} of epoch {self.epoch} from the memory ranks within "
                    f"{self.timeout_s:g}s (timeout_s)"
                )
            time.sleep(POLL_S)

    def _meanwhile(self) -> None:
        """What to move while a batch is awaited: nothing here (a learner that samples sends the
        requests of the batches it has sampled since)."""

    def frame(self, batch: int) -> wire.Frame:
        """Batch ``batch``, in order: views of a receive buffer (one memory rank) or assembled."""
        return self.received(batch).assembled()

    def received(self, batch: int) -> Received:
        """Batch ``batch``, in order: the owner's frame and every rank's rows (views of the
        receive buffers), for the learner to assemble (see ``Received``)."""
        try:
            frames = self._arrived(batch)
            owner = frames[batch % self.shard_count]
            if (owner.epoch, owner.batch) != (self.epoch, batch):
                raise PipelineError(
                    f"memory rank {batch % self.shard_count} sent batch {owner.batch} of epoch "
                    f"{owner.epoch}, expected {batch} of {self.epoch}"
                )
            return Received(owner, [part["x"] for part in frames], self.learner_cache, self.block_rows)
        except wire.FrameError as exc:  # a forged or corrupt frame: the session cannot go on
            self._fail(f"batch {batch}: {exc}")

    def _arrived(self, batch: int) -> list[wire.Frame]:
        """Every memory rank's frame of ``batch`` (the next in order), once all have arrived."""
        started = time.perf_counter()
        self._wait(batch)
        self.learner_stall_s += time.perf_counter() - started
        self._received += 1
        return [wire.decode(bufs[batch % self.buffers]) for bufs in self._bufs]

    def release(self, batch: int) -> None:
        """Batch ``batch``'s buffer may take batch + buffers: post it and credit it."""
        upcoming = batch + self.buffers
        if upcoming < self.num_batches:
            with self._lock:
                if self._leaving:
                    return
                self._post(upcoming)
            self._send(Credit(session=self.session, upto=upcoming + 1))

    def stats(self) -> PipelineStats:
        """The memory ranks' stats of the epoch just read (they send them after its last batch)."""
        parts = []
        for rank in self.ranks:
            while rank not in self._ends or self._ends[rank].epoch != self.epoch:  # older ones are stale
                self._reply(rank, "epoch stats")
            parts.append(PipelineStats.model_validate_json(self._ends[rank].text()))
        return PipelineStats.combine(parts).with_learner(self.learner_cache.hits, self.learner_stall_s)

    def close(self) -> None:
        if self.opened:
            self.opened = False
            if not self.failed:
                self._drain()
            self._send(Close(session=self.session))
