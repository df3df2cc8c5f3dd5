"""foundation.partial: directories renamed into place whole, and what the next writer does with
the partial ones a killed writer left: removed when their writer is certainly gone, reported
(with the command that removes them) when that cannot be shown, never touched while it runs."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.partial import OWNER_FILE, PartialDirectory, PartialOwner, partial_directories
from tests.interrupting import exited_pid, left_by, running_process, this_process

NOT_STARTED_THEN = 1  # a start time no running process has: it started at boot's first tick


@pytest.fixture
def running() -> Iterator[subprocess.Popen]:
    with running_process() as child:
        yield child


def test_a_committed_directory_takes_the_name_whole_without_its_owner_record(tmp_path):
    dst = tmp_path / "out"
    with PartialDirectory(dst) as partial:
        assert PartialOwner.model_validate_json((partial.path / OWNER_FILE).read_bytes()) == this_process()
        (partial.path / "data").write_text("whole")
        assert not dst.exists()
        partial.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in dst.iterdir()) == ["data"]


def test_a_failure_before_the_commit_leaves_nothing_beside_the_destination(tmp_path):
    with pytest.raises(RuntimeError), PartialDirectory(tmp_path / "out") as partial:
        (partial.path / "data").write_text("half")
        raise RuntimeError("the input broke")
    assert list(tmp_path.iterdir()) == []


def test_a_partial_directory_whose_writer_is_gone_is_removed_by_the_next_writer(tmp_path, caplog):
    dst = tmp_path / "out"
    gone_pid = exited_pid()
    stale = left_by(dst, this_process().model_copy(update={"pid": gone_pid}))
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst):
        assert not stale.exists()
    assert f"removed {stale}" in caplog.text and f"pid {gone_pid}, is gone" in caplog.text


def test_a_pid_now_held_by_another_process_is_not_the_writer(tmp_path, running, caplog):
    dst = tmp_path / "out"
    stale = left_by(dst, this_process().model_copy(update={"pid": running.pid, "started": NOT_STARTED_THEN}))
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst):
        assert not stale.exists()
    assert "the pid now belongs to another process" in caplog.text


def test_a_partial_directory_from_before_this_machine_restarted_is_removed(tmp_path, caplog):
    dst = tmp_path / "out"
    if this_process().machine is None or this_process().boot is None:
        pytest.skip("needs /etc/machine-id and a kernel boot id to tell a restart")
    stale = left_by(dst, this_process().model_copy(update={"boot": "an-earlier-boot"}))
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst):
        assert not stale.exists()
    assert "has restarted since" in caplog.text


def test_a_running_writers_partial_directory_is_left_alone_and_named(tmp_path, running, caplog):
    dst = tmp_path / "out"
    live = left_by(dst, PartialOwner.of_process(running.pid))
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst) as partial:
        partial.commit()
    assert (live / "features.npy").read_bytes() == b"half a matrix"
    assert f"pid {running.pid}, is still running" in caplog.text


@pytest.mark.parametrize(
    ("owner", "why"),
    [
        (None, "does not record which process writes it"),
        (this_process().model_copy(update={"host": "another-host", "boot": "its-boot"}), "on another-host, ran"),
        (this_process().model_copy(update={"pid_namespace": "pid:[1]"}), "ran in another container"),
    ],
    ids=["no-record", "another-machine", "another-container"],
)
def test_what_cannot_be_shown_stale_is_reported_with_the_command_that_removes_it(tmp_path, caplog, owner, why):
    dst = tmp_path / "out"
    kept = left_by(dst, owner)
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst):
        pass
    assert kept.exists()
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert why in record.getMessage() and record.getMessage().endswith(f"rm -rf {kept}")


def test_an_earlier_fetchs_dst_partial_is_reported_and_other_destinations_are_not_touched(tmp_path, caplog):
    dst = tmp_path / "out"
    legacy = dst.with_name("out.partial")
    legacy.mkdir()
    another = left_by(tmp_path / "out.v2", this_process().model_copy(update={"pid": exited_pid()}))
    assert partial_directories(dst) == [legacy]
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst):
        pass
    assert legacy.exists() and another.exists()
    assert f"rm -rf {legacy}" in caplog.text and str(another) not in caplog.text


def test_this_processs_own_partial_directories_are_passed_over_in_silence(tmp_path, caplog):
    dst = tmp_path / "out"
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst) as staging:
        with PartialDirectory(dst) as final:
            final.commit()
        assert staging.path.exists()
    assert caplog.records == []


def test_a_discarded_directory_loses_its_writers_record_last(tmp_path, monkeypatch):
    """A second Ctrl-C can cut the cleanup short: what is left still names its (then gone)
    writer, so the next writer removes it rather than only reporting it."""
    partial = PartialDirectory(tmp_path / "out")
    (partial.path / "csc").mkdir()
    (partial.path / "features.npy").write_bytes(b"half a matrix")
    removed: list[str] = []
    rmtree = shutil.rmtree

    def recording_rmtree(path, *args, **kwargs):
        removed.append(Path(path).name)
        rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", recording_rmtree)
    partial.discard()
    assert removed == ["csc", partial.path.name]  # the record went only with the directory itself
    assert list(tmp_path.iterdir()) == []
