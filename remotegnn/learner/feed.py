"""Feed the device: a received batch's tensors on the loader's device, ``x`` assembled from the
device cache's hits and the rows that crossed from host memory.

On a CUDA device everything here runs on a side stream, in the receiver thread, ahead of the
training loop (the loader keeps at least ``MIN_AHEAD`` batches in flight): the batch is staged in
pinned memory (``staging``), copied without blocking, and the training stream waits on an event
(``hand_over``), not the host, so the copy overlaps the step that is running. CUDA events time the
copies and say how much of them the step hid (``counters``). On a CPU device the same stages run
with a separate tensor standing in for device memory, so every count is the one a GPU would see.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from contracts.stats import FeedCounters
from remotegnn.cache.learner import Received
from remotegnn.learner.device_cache import DeviceCache, Split, as_tensor
from remotegnn.learner.staging import Staging, StagingSlot

INDEX_ATTRS = ("n_id", "edge_index", "e_id", "input_id", "y")
"""A frame's tensors besides the feature rows."""
MIN_AHEAD = 2
"""Batches the receiver keeps staged and copying ahead of the step on a CUDA device: one whose copy
overlaps the running step, one more so a slower copy is still hidden by the next step."""
EXTRA_SLOTS = 2
"""Staging slots beyond the batches ahead: the one being assembled and the one the step uses."""


@dataclass
class Timing:
    """One batch's copy on a CUDA device: its events (elapsed times are read at the epoch's end)."""

    start: torch.cuda.Event
    copied: torch.cuda.Event  # the copies and the gather are done
    ready: torch.cuda.Event  # the whole batch is built (what the training stream waits on)
    reached: torch.cuda.Event | None = None  # the training stream reached the batch


@dataclass
class Fed:
    """A batch's tensors on the device; ``held``: some still point into the receive ring."""

    tensors: dict[str, torch.Tensor]
    held: bool
    timing: Timing | None = None


@dataclass
class DeviceFeed:
    """The feed stage of one loader: its device, device cache, staging ring and counters."""

    device: torch.device
    cache: DeviceCache
    zero_copy: bool
    pin_memory: bool
    ahead: int
    stream: torch.cuda.Stream | None = None
    staging: Staging | None = None
    counters: FeedCounters = field(default_factory=FeedCounters)
    _timings: list[Timing] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.device.type == "cuda":
            self.stream = torch.cuda.Stream(self.device)
            self.staging = Staging(self.ahead + EXTRA_SLOTS, pinned=True)

    def start_epoch(self) -> None:
        self.counters, self._timings = FeedCounters(), []

    @contextmanager
    def side_stream(self):
        """Where a batch is fed and built: the side stream on CUDA (yields its ``Timing``, whose
        ``ready`` is recorded on leaving), else the current thread (yields None, timed on the host)."""
        if self.stream is None:
            started = time.perf_counter()
            yield None
            self.counters.copy_s += time.perf_counter() - started
            return
        with torch.cuda.stream(self.stream):
            timing = Timing(*(torch.cuda.Event(enable_timing=True) for _ in range(3)))
            yield timing
            timing.ready.record(self.stream)
        self._timings.append(timing)

    def feed(self, received: Received, timing: Timing | None) -> Fed:
        """The batch's tensors on the device (call inside ``side_stream``)."""
        frame = received.frame
        n_id = frame["n_id"]
        split = self.cache.split(n_id) if self.cache.size else None
        nodes = n_id if split is None else n_id[split.miss_pos]
        if self.staging is not None:
            assert timing is not None  # a CUDA feed runs on the side stream
            return self._to_cuda(received, nodes, split, self.staging.next(), timing)
        held = self.zero_copy and not self.pin_memory
        tensors = {name: as_tensor(frame[name]) for name in INDEX_ATTRS if name in frame.tensors}
        rows = received.rows(nodes)
        self._count(as_tensor(rows), list(tensors.values()), split)
        x = as_tensor(rows if split is None else self.cache.assemble_on_host(rows, split))
        if self.pin_memory:
            tensors = {k: v.pin_memory() for k, v in tensors.items()}
            x = x.pin_memory()
        elif not held:
            tensors = {k: v.clone() for k, v in tensors.items()}
            x = x.clone() if split is None else x  # a split's x is a new array already
        tensors["x"] = x
        return Fed(tensors, held)

    def _to_cuda(
        self, received: Received, nodes: np.ndarray, split: Split | None, slot: StagingSlot, timing: Timing
    ) -> Fed:
        """Stage in pinned memory, copy without blocking, gather the hits, all on the side stream."""
        frame, part = received.frame, received.parts[0]
        host = {name: slot.put(name, frame[name]) for name in INDEX_ATTRS if name in frame.tensors}
        rows = received.rows(nodes, slot.take("x", (len(nodes), part.shape[1]), part.dtype))
        positions = {name: slot.put(name, value) for name, value in vars(split).items()} if split else {}
        timing.start.record(self.stream)  # the copies start here; staging above ran on the host
        tensors = {k: as_tensor(v).to(self.device, non_blocking=True) for k, v in host.items()}
        on_device = {k: as_tensor(v).to(self.device, non_blocking=True) for k, v in positions.items()}
        misses = as_tensor(rows).to(self.device, non_blocking=True)
        slot.done = torch.cuda.Event()
        slot.done.record(self.stream)  # the pinned slot may be rewritten once the copies are out
        self._count(as_tensor(rows), [as_tensor(v) for v in host.values()], split)
        tensors["x"] = self._gather(misses, split, on_device)
        timing.copied.record(self.stream)
        return Fed(tensors, held=False, timing=timing)

    def _gather(self, misses: torch.Tensor, split: Split | None, positions: dict[str, torch.Tensor]) -> torch.Tensor:
        """``x`` on the device: the misses at their positions, the cache's rows at the hits'."""
        if split is None:
            return misses
        count = len(split.hit_pos) + len(split.miss_pos)
        x = torch.empty((count, self.cache.rows.shape[1]), dtype=self.cache.rows.dtype, device=self.device)
        x.index_copy_(0, positions["miss_pos"], misses)
        x.index_copy_(0, positions["hit_pos"], self.cache.rows.index_select(0, positions["hit_row"]))
        return x

    def _count(self, rows: torch.Tensor, index: list[torch.Tensor], split: Split | None) -> None:
        counters = self.counters
        counters.host_to_device_bytes += rows.numel() * rows.element_size()
        counters.host_to_device_index_bytes += sum(t.numel() * t.element_size() for t in index)
        if split is not None:  # the positions cross too: 20 bytes per node where a row is hundreds
            counters.host_to_device_index_bytes += sum(value.nbytes for value in vars(split).values())
            counters.rows_from_device_cache += len(split.hit_pos)

    def hand_over(self, fed: Fed, batch) -> None:
        """Make the training loop's stream wait for ``batch`` (an event, not the host), and tell
        the allocator its tensors are now used on that stream."""
        if fed.timing is None:
            return
        stream = torch.cuda.current_stream(self.device)
        fed.timing.reached = torch.cuda.Event(enable_timing=True)
        fed.timing.reached.record(stream)
        stream.wait_event(fed.timing.ready)
        for _, value in batch:
            if isinstance(value, torch.Tensor) and value.is_cuda:
                value.record_stream(stream)

    def epoch_counters(self) -> FeedCounters:
        """The epoch's counters, with the CUDA copies' seconds and the share the steps hid."""
        counters = self.counters
        if self._timings:
            copy_ms = exposed_ms = 0.0
            for timing in self._timings:
                timing.ready.synchronize()
                copy_ms += timing.start.elapsed_time(timing.copied)
                if timing.reached is not None:  # the step waited only if the batch was not ready when it got there
                    exposed_ms += max(0.0, timing.reached.elapsed_time(timing.ready))
            counters.copy_s = copy_ms / 1e3
            counters.copy_hidden_share = 1.0 - min(1.0, exposed_ms / copy_ms) if copy_ms else 1.0
        return counters
