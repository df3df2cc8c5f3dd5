"""The learner's side of the MPI transport when the learner samples its own batches
(``sampling="learner"``): only the ids of the rows it lacks cross to the memory ranks, and only
those rows come back; no batch's ids, edges or labels cross the link.

The learner opens the dataset the memory ranks serve (it needs the structure in its RAM) and runs
a structure-only pipeline over it: the same seeds, options and keys (seed, epoch, batch), so its
frames are exactly the ids, edges and labels a memory rank's would be. For batch b it sends each
memory rank r, on the session's BLUEPRINT tag, the ids of the batch's nodes that rank holds
(``v % ranks == r``) and the learner does not (RAM or device tier), in ``n_id`` order: the rows
that rank's vector loader would have picked itself (``select_sent``), so the parts assemble as
they always do (``Received``). Requests go out in batch order, for credited batches only, as
soon as the batch is sampled: every memory rank receives them in that order (MPI keeps one
sender's messages on one tag in order), one per batch it hands out, so credits, abandoned epochs
and resumed ones work as with memory sampling.
"""

from __future__ import annotations

import numpy as np

from contracts.dataset import DatasetMeta
from contracts.stats import PipelineStats
from contracts.wirebytes import position_dtype
from foundation.errors import UsageError
from remotegnn import wire
from remotegnn.cache.kernels import select_sent
from remotegnn.cache.learner import Received, held_mask
from remotegnn.mpi.client import MpiSource
from remotegnn.mpi.messages import BLUEPRINT, session_tag
from remotegnn.mpi.world import World
from remotegnn.server import LocalPipeline, PipelineError, PipelineOptions
from remotegnn.server.seeds import SeedSource
from remotegnn.server.shard import Shard
from remotegnn.store import GraphDataset

REQUEST = "n_id"
"""The one tensor of a request frame: the ids (stored positions) of the rows a rank is to send."""


class LearnerSampledSource(MpiSource):
    """Batches of one loader sampled here, their missing feature rows from the job's memory ranks."""

    SAMPLING = "learner"

    def __init__(self, world: World, dataset: str | None, *, timeout_s: float):
        super().__init__(world, dataset, timeout_s=timeout_s)
        self.blueprint_tag = session_tag(world.learner_index, self.session, BLUEPRINT)
        self.local: LocalPipeline | None = None
        self._sampled: dict[int, wire.Frame] = {}  # requested batches' structure, until they are received
        self._requested = 0  # the next batch to request
        self.request_bytes = 0  # this epoch's request frames

    def open(
        self,
        seeds: SeedSource,
        options: PipelineOptions,
        learner: Shard,
        buffers: int,
        num_nodes: int,
    ) -> None:
        """Open the memory ranks' sessions, then this learner's structure-only pipeline."""
        super().open(seeds, options, learner, buffers, num_nodes)
        dataset = self._structure()
        held = np.concatenate([self.learner_cache.nodes, self.device_rows.nodes])
        self.held = held_mask(held, num_nodes)  # what the memory ranks leave out: both tiers
        self.id_dtype = position_dtype(num_nodes)
        self._positions = np.empty(0, dtype=np.int64)
        # As many batches sampled ahead as the learner has receives posted: each one credited may be requested.
        local = options.model_copy(update={"ring_slots": self.buffers})
        self.local = LocalPipeline(dataset, seeds, local, learner=learner, feature_rows=False)

    def _structure(self) -> GraphDataset:
        """The dataset the memory ranks serve, opened here (the same files: their meta must agree)."""
        try:
            dataset = GraphDataset.open(self.served)
        except Exception as exc:
            raise UsageError(
                f"sampling='learner': the learner samples from its own copy of the dataset the memory "
                f"ranks serve, {self.served}, and cannot open it ({exc}); copy it to the same path on "
                "this machine, or use sampling='memory'"
            ) from None
        if dataset.meta != DatasetMeta.model_validate(self.meta):
            raise UsageError(
                f"sampling='learner': {self.served} on this machine is not the dataset the memory ranks serve "
                "(their meta.json differ)"
            )
        return dataset

    def describe(self) -> tuple[dict, dict[str, np.ndarray], np.ndarray | None]:
        meta, splits, user_ids = super().describe()
        self.meta = meta
        return meta, splits, user_ids

    # -- epochs ------------------------------------------------------------------------------------
    def start_epoch(self, epoch: int, first: int = 0) -> int:
        count = super().start_epoch(epoch, first)  # finishes an abandoned epoch first, its requests too
        assert self.local is not None, "the session is not open"
        self.local.start_epoch(epoch, first=first)
        self._sampled.clear()
        self._requested, self.request_bytes = first, 0
        return count

    def _wait(self, batch: int) -> None:
        assert self.local is not None, "the session is not open"
        while self._requested <= batch:  # the batch must be asked for before its rows can come
            self._request(self.local.next_frame(self._requested))
        super()._wait(batch)

    def _meanwhile(self) -> None:
        """Ask for the rows of every credited batch sampled since, without waiting for any."""
        assert self.local is not None, "the session is not open"
        while self._requested < self._posted and (frame := self.local.poll_frame(self._requested)) is not None:
            self._request(frame)

    def _request(self, frame: wire.Frame) -> None:
        """Send each memory rank the ids of its rows of ``frame``'s batch that the learner lacks."""
        batch, n_id = frame.batch, frame[REQUEST]
        if len(self._positions) < len(n_id):
            self._positions = np.empty(len(n_id), dtype=np.int64)
        requests = []
        for index, rank in enumerate(self.ranks):
            count = select_sent(n_id, self.held, index, self.shard_count, self.block_rows, self._positions)
            ids = n_id[self._positions[:count]].astype(self.id_dtype, copy=False)
            buf = np.empty(wire.frame_size([wire.spec_of(REQUEST, ids)]), dtype=np.uint8)
            size = wire.encode(buf, wire.Kind.BLUEPRINT, frame.epoch, batch, batch, {REQUEST: ids})
            requests.append((rank, buf[:size]))
        with self._lock:
            if self._leaving:
                raise PipelineError("this learner is leaving the job: no more batches")
            self._requests = [(r, b) for r, b in self._requests if not r.Test()]
            for rank, buf in requests:
                sent = self.world.comm.Isend([buf, self.MPI.BYTE], dest=rank, tag=self.blueprint_tag)
                self._requests.append((sent, buf))
        self.request_bytes += sum(len(buf) for _, buf in requests)
        self._sampled[batch] = frame
        self._requested = batch + 1

    def received(self, batch: int) -> Received:
        """Batch ``batch``, in order: the structure sampled here and every rank's rows."""
        parts = self._arrived(batch)
        structure = self._sampled.pop(batch)
        for rank, part in zip(self.ranks, parts):
            if (part.epoch, part.batch) != (self.epoch, batch) or set(part.tensors) != {"x"}:
                self._fail(
                    f"memory rank {rank} sent batch {part.batch} of epoch {part.epoch} with "
                    f"{sorted(part.tensors)}, expected only the rows x of batch {batch} of epoch {self.epoch} "
                    "(does it serve sampling='learner'?)"
                )
        try:
            return Received(structure, [part["x"] for part in parts], self.learner_cache, self.block_rows)
        except wire.FrameError as exc:  # a structure the checks refuse: the session cannot go on
            self._fail(f"batch {batch}: {exc}")

    def release(self, batch: int) -> None:
        """The batch's structure slot here and its receive buffers may take batch + buffers."""
        assert self.local is not None, "the session is not open"
        self.local.release(batch)
        super().release(batch)

    def stats(self) -> PipelineStats:
        """The memory ranks' stats, with sampling's stage as it ran here and the requests' bytes."""
        assert self.local is not None, "the session is not open"
        stats = super().stats()
        return stats.model_copy(
            update={"batch_creators": self.local.stats().batch_creators, "request_bytes": self.request_bytes}
        )

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.local is not None:
                self.local.close()
