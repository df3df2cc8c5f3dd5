"""The loader's progress events: one per epoch in the file MEMORYBRIDGE_PROGRESS names, and none elsewhere."""

from __future__ import annotations

import logging

from contracts.progress import PROGRESS_ENV, read_events
from remotegnn.loader import DistributedGraphLoader
from remotegnn.server import ServerOptions

FAST = dict(server=ServerOptions(batch_creators=1, vector_loaders=1), timeout=20)


def test_each_epoch_the_loop_finishes_is_one_event(rmat, tmp_path, monkeypatch):
    progress = tmp_path / "progress.jsonl"
    monkeypatch.setenv(PROGRESS_ENV, str(progress))
    with DistributedGraphLoader(rmat.path, [5, 3], batch_size=256, shuffle=True, seed=0, **FAST) as loader:
        for _ in range(2):
            batches = sum(1 for _ in loader)
    events = read_events(progress.read_text())
    assert [e.epoch for e in events] == [0, 1]
    assert all(e.batches == batches == len(loader) and e.seconds > 0 and e.batches_per_s > 0 for e in events)
    assert events[1].stats is not None and events[1].stats.batches == batches


def test_each_loader_says_which_it_is_in_the_order_they_were_made(rmat, tmp_path, monkeypatch):
    progress = tmp_path / "progress.jsonl"
    monkeypatch.setenv(PROGRESS_ENV, str(progress))
    with (
        DistributedGraphLoader(rmat.path, [5], input_nodes="train", batch_size=128, shuffle=True, **FAST) as train,
        DistributedGraphLoader(rmat.path, [5], batch_size=1024, **FAST) as evaluate,
    ):
        for _ in range(2):
            sum(1 for _ in train)
            sum(1 for _ in evaluate)
    events = read_events(progress.read_text())
    first = events[0].loader  # 0 in a fresh process: this one has made loaders before
    assert [(e.loader - first, e.epoch, e.batches) for e in events] == [
        (0, 0, len(train)), (1, 0, len(evaluate)), (0, 1, len(train)), (1, 1, len(evaluate))
    ]  # fmt: skip


def test_an_epoch_left_unfinished_is_no_event(rmat, tmp_path, monkeypatch):
    progress = tmp_path / "progress.jsonl"
    monkeypatch.setenv(PROGRESS_ENV, str(progress))
    with DistributedGraphLoader(rmat.path, [5, 3], batch_size=256, **FAST) as loader:
        next(iter(loader))
    assert not progress.exists()


def test_a_file_that_cannot_be_written_is_warned_about_and_training_goes_on(rmat, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(PROGRESS_ENV, str(tmp_path / "missing-directory" / "progress.jsonl"))
    with caplog.at_level(logging.WARNING), DistributedGraphLoader(rmat.path, [5], batch_size=512, **FAST) as loader:
        for _ in range(2):
            assert sum(1 for _ in loader) == len(loader)
    warnings = [r for r in caplog.records if "progress events cannot be written" in r.getMessage()]
    assert len(warnings) == 1  # once, then left alone


def test_while_an_epoch_runs_the_loader_beats_where_it_is(rmat, tmp_path, monkeypatch):
    """Heartbeats (here one a batch) say the loop is alive and how far it is into the epoch; the
    epoch's end is still one event after them."""
    from remotegnn import events as loader_events

    progress = tmp_path / "progress.jsonl"
    monkeypatch.setenv(PROGRESS_ENV, str(progress))
    monkeypatch.setattr(loader_events, "HEARTBEAT_S", 0.0)
    with DistributedGraphLoader(rmat.path, [5], batch_size=512, **FAST) as loader:
        count = sum(1 for _ in loader)
    events = read_events(progress.read_text())
    assert [e.event for e in events] == ["heartbeat"] * count + ["epoch-ended"]
    assert [e.batches for e in events[:-1]] == list(range(1, count + 1))
