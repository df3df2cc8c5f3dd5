"""contracts.progress: events appended as whole lines and read back, a line still being written left for later."""

from __future__ import annotations

import pytest

from contracts.progress import EpochEnded, append_event, read_events
from foundation.errors import InputFileError


def event(epoch: int) -> EpochEnded:
    return EpochEnded(epoch=epoch, seconds=2.0, batches=10, batches_per_s=5.0, stall_s=0.1)


def test_appended_events_read_back_in_order(tmp_path):
    path = tmp_path / "progress.jsonl"
    for epoch in range(3):
        append_event(path, event(epoch))
    assert [(e.epoch, e.seconds, e.batches) for e in read_events(path.read_text())] == [
        (0, 2.0, 10),
        (1, 2.0, 10),
        (2, 2.0, 10),
    ]
    assert path.read_text().count("\n") == 3


def test_a_line_still_being_written_is_left_for_later(tmp_path):
    whole = event(0).model_dump_json() + "\n"
    partial = event(1).model_dump_json()[:20]
    assert [e.epoch for e in read_events(whole + partial)] == [0]


def test_a_line_that_is_not_an_event_names_its_line(tmp_path):
    text = event(0).model_dump_json() + "\n" + '{"kind": "memorybridge.progress", "epoch": -1}\n'
    with pytest.raises(InputFileError, match="progress.jsonl line 2 is not a progress event"):
        read_events(text, "progress.jsonl")
