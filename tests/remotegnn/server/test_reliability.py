"""Neither side hangs the other: early exits, killed and stalled workers, a dead learner.

Every test checks that all worker processes are gone (waited for through pidfds, no sleeps) and
that /dev/shm holds no new segment.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from remotegnn import wire
from remotegnn.loader import DistributedGraphLoader
from remotegnn.sampling import NeighborSampler
from remotegnn.server import LocalPipeline, PipelineError, PipelineOptions, ServerOptions, stages
from remotegnn.server.seeds import NodeSeeds

FAST = dict(server=ServerOptions(batch_creators=1, vector_loaders=2), timeout=20)


def shm() -> set[str]:
    return set(os.listdir("/dev/shm"))


def gone(pids, timeout: float = 10.0) -> bool:
    """True once every pid has exited (pidfds become readable when a process ends)."""
    fds = []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + timeout
        waiting = list(fds)
        while waiting and (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select(waiting, [], [], left)
            waiting = [fd for fd in waiting if fd not in readable]
        return not waiting
    finally:
        for fd in fds:
            os.close(fd)


@pytest.fixture
def clean_shm():
    before = shm()
    yield
    assert {n for n in shm() - before if n.startswith("rgnn_")} == set()


def test_breaking_out_then_deleting_the_loader_stops_everything(rmat, clean_shm):
    loader = DistributedGraphLoader(rmat.path, [5, 5], input_nodes="train", batch_size=16, **FAST)
    pids = loader._pipeline.pids
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert len(list(loader)) == len(loader)  # the abandoned epoch was drained, the next is whole
    del loader
    assert gone(pids)


def test_a_killed_worker_is_a_clear_error_not_a_hang(rmat, clean_shm):
    loader = DistributedGraphLoader(rmat.path, [5, 5], input_nodes="train", batch_size=8, **FAST)
    pids = loader._pipeline.pids
    batches = iter(loader)
    next(batches)
    os.kill(pids[-1], signal.SIGKILL)  # a vector loader
    # SIGKILL lands asynchronously: without waiting for the exit, the other loader can hand over
    # the rest of the epoch before the dead one is reaped, and nothing fails (seen in full runs).
    assert gone([pids[-1]])
    with pytest.raises(PipelineError, match=r"vector loader 1 \(pid \d+\) exited with code -9"):
        for _ in batches:
            pass
    assert gone(pids)
    with pytest.raises(PipelineError, match="closed"):
        next(iter(loader))
    loader.close()


def test_a_stalled_server_times_out(rmat, clean_shm):
    seeds = np.arange(512)
    options = PipelineOptions(batch_size=8, batch_creators=1, vector_loaders=1, timeout_s=0.5)
    pipeline = LocalPipeline(rmat, NodeSeeds(seeds, seeds), options)
    pids = pipeline.pids
    os.kill(pids[0], signal.SIGSTOP)  # the batch creator freezes (still alive: only the deadline can tell)
    pipeline.start_epoch(0)
    started = time.monotonic()
    with pytest.raises(PipelineError, match=r"within 0.5s \(timeout_s\)"):
        pipeline.frame(0)
    assert time.monotonic() - started < 5
    assert gone(pids)


def test_a_long_non_ascii_worker_error_arrives_cut_to_its_slot(rmat, clean_shm, monkeypatch):
    """A worker's 33 kB CJK message (three UTF-8 bytes a character) is more than the error slot
    holds: the learner still raises the worker's own error, cut at a character boundary within
    the budget and marked as cut, not a frame error about the slot."""
    message = "采样失败：节点不存在。" * 1000

    class FailingSampler(NeighborSampler):
        def sample(self, *args, **kwargs):
            raise RuntimeError(message)

    monkeypatch.setattr(stages, "NeighborSampler", FailingSampler)  # the forked batch creator inherits it
    seeds = np.arange(64)
    pipeline = LocalPipeline(
        rmat, NodeSeeds(seeds, seeds), PipelineOptions(batch_size=8, batch_creators=1, vector_loaders=2, timeout_s=20)
    )
    pids = pipeline.pids
    pipeline.start_epoch(0)
    with pytest.raises(PipelineError) as raised:
        pipeline.frame(0)
    text = str(raised.value)
    assert text.startswith("batch creator 0 failed: Traceback")
    assert f"RuntimeError: {message[:200]}" in text
    assert text.endswith(wire.TRUNCATION_MARK)
    assert len(text.encode("utf-8")) <= stages.ERROR_TEXT_BYTES
    assert gone(pids)


def test_workers_exit_when_the_learner_dies(rmat, clean_shm):
    script = (
        f"import os, sys, numpy as np\nfrom remotegnn.store import GraphDataset\n"
        f"from remotegnn.server import LocalPipeline, PipelineOptions\nfrom remotegnn.server.seeds import NodeSeeds\n"
        f"ds = GraphDataset.open({str(rmat.path)!r}); s = np.arange(256)\n"
        f"p = LocalPipeline(ds, NodeSeeds(s, s), PipelineOptions(batch_size=8, batch_creators=1, vector_loaders=1))\n"
        f"p.start_epoch(0); p.frame(0)\nprint(*p.pids, flush=True)\nos._exit(0)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert gone([int(pid) for pid in result.stdout.split()])
