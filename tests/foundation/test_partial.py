"""foundation.partial: directories renamed into place whole, replacing the old copy without ever
leaving the name empty or the old copy where nothing finds it, and what the next writer does with
the partial ones a killed writer left: removed when their writer is certainly gone, reported
(with the command that removes them) when that cannot be shown, never touched while it runs."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.partial import OLD, OWNER_FILE, PartialDirectory, PartialOwner, partial_directories
from tests.interrupting import exited_pid, left_by, running_process, this_process

NOT_STARTED_THEN = 1  # a start time no running process has: it started at boot's first tick
CHILD_S = 60  # deadline for a child writer (imports included)
# A writer that replaces DST and is SIGKILLed while it removes the old copy it moved aside.
KILLED_WHILE_REMOVING_THE_OLD_COPY = """
import os, shutil, signal, sys
from pathlib import Path
from foundation.partial import OLD, PartialDirectory

rmtree = shutil.rmtree

def killed_midway(path, *args, **kwargs):
    if Path(path).name == OLD:
        (Path(path) / "features.npy").unlink()  # the removal has begun
        os.kill(os.getpid(), signal.SIGKILL)
    rmtree(path, *args, **kwargs)

shutil.rmtree = killed_midway
with PartialDirectory(sys.argv[1]) as partial:
    (partial.path / "data").write_text("new")
    partial.commit()
"""


@pytest.fixture
def running() -> Iterator[subprocess.Popen]:
    with running_process() as child:
        yield child


def old_copy(dst: Path) -> Path:
    """``dst`` as an earlier run wrote it."""
    (dst / "csc").mkdir(parents=True)
    (dst / "features.npy").write_text("old")
    return dst


def test_a_committed_directory_takes_the_name_whole_without_its_owner_record(tmp_path):
    dst = tmp_path / "out"
    with PartialDirectory(dst) as partial:
        assert PartialOwner.model_validate_json((partial.root / OWNER_FILE).read_bytes()) == this_process()
        (partial.path / "data").write_text("whole")
        assert not dst.exists()
        partial.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in dst.iterdir()) == ["data"]


def test_a_commit_replaces_the_old_copy_and_removes_it(tmp_path):
    dst = old_copy(tmp_path / "out")
    with PartialDirectory(dst) as partial:
        (partial.path / "data").write_text("new")
        partial.commit()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # removed by the commit itself
    assert sorted(p.name for p in dst.iterdir()) == ["data"]


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, as Python starts a command, whatever this run set."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_an_interrupt_between_the_two_renames_waits_until_the_new_copy_has_the_name(tmp_path, monkeypatch, ctrl_c):
    dst = old_copy(tmp_path / "out")
    replace = os.replace

    def replace_then_interrupt(src, target):
        replace(src, target)
        if Path(target).name == OLD:  # the old copy moved aside, the new one not yet in place
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt) as interrupt, PartialDirectory(dst) as partial:
        (partial.path / "data").write_text("new")
        monkeypatch.setattr(os, "replace", replace_then_interrupt)
        partial.commit()
    assert (dst / "data").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert interrupt.value.__notes__ == [f"{dst} had been written in full before that, and is kept"]


def test_an_interrupt_while_the_old_copy_is_removed_keeps_the_new_one_and_the_unwinding_finishes(tmp_path, monkeypatch):
    dst = old_copy(tmp_path / "out")
    rmtree = shutil.rmtree

    def interrupted_midway(path, *args, **kwargs):
        if Path(path).name == OLD and (Path(path) / "features.npy").exists():
            (Path(path) / "features.npy").unlink()
            raise KeyboardInterrupt
        rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", interrupted_midway)
    with pytest.raises(KeyboardInterrupt) as interrupt, PartialDirectory(dst) as partial:
        (partial.path / "data").write_text("new")
        partial.commit()
    assert interrupt.value.__notes__ == [f"{dst} had been written in full before that, and is kept"]
    assert sorted(p.name for p in dst.iterdir()) == ["data"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_old_copy_whose_removal_was_killed_is_removed_by_the_next_writer(tmp_path, caplog):
    dst = old_copy(tmp_path / "out")
    child = subprocess.run([sys.executable, "-c", KILLED_WHILE_REMOVING_THE_OLD_COPY, dst], timeout=CHILD_S)
    assert child.returncode == -signal.SIGKILL
    assert sorted(p.name for p in dst.iterdir()) == ["data"]
    [left] = partial_directories(dst)
    assert sorted(p.name for p in left.iterdir()) == [OWNER_FILE, OLD]
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst):
        assert not left.exists()
    assert f"removed {left}" in caplog.text


def test_a_failed_rename_puts_the_old_copy_back(tmp_path, monkeypatch):
    dst = old_copy(tmp_path / "out")
    replace = os.replace

    def new_copy_refused(src, target):
        if Path(target) == dst and Path(src).name != OLD:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        replace(src, target)

    with pytest.raises(OSError, match="Input/output error"), PartialDirectory(dst) as partial:
        (partial.path / "data").write_text("new")
        monkeypatch.setattr(os, "replace", new_copy_refused)
        partial.commit()
    assert (dst / "features.npy").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


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


@pytest.mark.parametrize(
    "name",
    ["out.partial", f".out.replaced-{os.getpid()}"],
    ids=["rsync-copy-or-earlier-fetch", "earlier-versions-old-copy"],
)
def test_unrecorded_directories_of_the_destination_are_reported_and_others_not_touched(tmp_path, caplog, name):
    dst = old_copy(tmp_path / "out")
    unrecorded = old_copy(tmp_path / name)
    another = left_by(tmp_path / "out.v2", this_process().model_copy(update={"pid": exited_pid()}))
    assert partial_directories(dst) == [unrecorded]
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst) as partial:
        (partial.path / "data").write_text("new")
        partial.commit()  # whatever names earlier runs left, none is in the way
    assert (dst / "data").read_text() == "new"
    assert unrecorded.exists() and another.exists()
    assert f"rm -rf {unrecorded}" in caplog.text and str(another) not in caplog.text


def test_this_processs_own_partial_directories_are_passed_over_in_silence(tmp_path, caplog):
    dst = tmp_path / "out"
    with caplog.at_level(logging.INFO, "foundation.partial"), PartialDirectory(dst) as staging:
        with PartialDirectory(dst) as final:
            final.commit()
        assert staging.path.exists()
    assert caplog.records == []


@pytest.mark.parametrize("by", ["discard", "next-writer"])
def test_a_removed_partial_directory_loses_its_writers_record_last(tmp_path, monkeypatch, by):
    """A second Ctrl-C or SIGKILL can cut the removal short: what is left still names its (then
    gone) writer, so the next writer removes it rather than only reporting it."""
    dst = tmp_path / "out"
    if by == "discard":
        partial = PartialDirectory(dst)
        path, removal = partial.root, partial.discard
    else:
        path = left_by(dst, this_process().model_copy(update={"pid": exited_pid()}))
        removal = lambda: PartialDirectory(dst).discard()  # noqa: E731  (the other branch names a bound method)
    (path / "csc").mkdir()
    removed: list[Path] = []
    rmtree = shutil.rmtree

    def recording_rmtree(target, *args, **kwargs):
        removed.append(Path(target))
        rmtree(target, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", recording_rmtree)
    removal()
    of_path = [target for target in removed if path in (target, target.parent)]
    assert path / "csc" in of_path and of_path[-1] == path  # the record went only with the directory itself
    assert list(tmp_path.iterdir()) == []
