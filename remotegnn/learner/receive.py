"""The receive stage: a thread that takes the epoch's batches in order from the pipeline (local
ring or MPI buffers), feeds each to the device and builds it, and queues it for the training
loop, at most the queue's size ahead; an error reaches the training loop through the queue."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from remotegnn.learner.feed import DeviceFeed, Fed

POLL_S = 0.1


def offer(ready: queue.Queue, item, stop: threading.Event) -> bool:
    """Put ``item`` unless the training loop has stopped listening (then False)."""
    while not stop.is_set():
        try:
            ready.put(item, timeout=POLL_S)
            return True
        except queue.Full:
            continue
    return False


def receive(
    pipeline: Any,
    feed: DeviceFeed,
    build: Callable,
    batches: range,
    ready: queue.Queue,
    stop: threading.Event,
) -> None:
    """Thread body: ``pipeline.received(b)`` -> ``feed`` -> ``build`` for each batch, queued as
    (batch, Fed). A batch that still points into the ring keeps its slot until the training loop
    moves past it; any other frees it at once."""
    try:
        for b in batches:
            received = pipeline.received(b)
            with feed.side_stream() as timing:
                fed: Fed = feed.feed(received, timing)
                batch = build(fed.tensors, received.frame, b)
            if not fed.held:
                pipeline.release(b)
            if not offer(ready, (batch, fed), stop):
                return
    except BaseException as exc:  # the training loop raises it
        offer(ready, exc, stop)
