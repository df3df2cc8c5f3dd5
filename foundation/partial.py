"""Directories written atomically, and the partial ones a killed writer left behind.

Every command that writes a directory (a dataset, a partition, a slice set, a fetched copy)
builds it in a hidden ``.NAME.XXXXXXXX.partial`` directory beside ``NAME`` (in its ``new``
folder, beside its writer's record) and renames it into place only when it is whole
(:class:`PartialDirectory`), so ``NAME`` is never half-written. The copy of ``NAME`` it replaces
is moved into the partial directory (as ``old``) and removed from there, so that copy is never
left under a name nothing knows. An error, Ctrl-C, SIGTERM or SIGHUP removes the partial
directory on the way out (:func:`foundation.cli.handle_interrupts` turns the signals into that
unwinding). Nothing can clean up after SIGKILL, the out-of-memory killer or a power loss, and the
partial directory they leave can be as large as the dataset (tens of GB), so the next writer of
the same ``NAME`` deals with it.

Remove what is provably stale, report the rest: a partial directory records its writer
(host, kernel boot, pid namespace, pid and the process's start time) in ``OWNER_FILE``. It is
removed when that writer is certainly gone: the same machine restarted since, or its process is
no longer running (a pid now held by a process that started at another time is not it). It is
left alone, with one warning line that names it and the command that removes it, when that
cannot be shown: written on another machine or in another container on this one (a shared
volume), by a writer that is still running (two runs writing one destination: the last to
finish wins), or without a record: ``NAME.partial``, where `provision` copies a dataset on a data
machine before checking it (and older versions of `remotegnn fetch` copied one), an older
version's ``.NAME.replaced-PID``, or a writer killed within the instant between creating it and
recording itself. Removing only provable leftovers never deletes another live run's work;
reporting the rest never leaves one silently, and never leaves a user guessing which of the
hidden directories is safe to delete. The directories of this
process's own writers (a conversion staged beside the dataset it then reorders into) are skipped
without a word.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shlex
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from foundation.errors import DiskFullError
from foundation.fileio import write_model
from foundation.models import StrictModel

log = logging.getLogger(__name__)

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)  # no room left, and a quota reached, end a writer alike
PARTIAL_SUFFIX = ".partial"
OWNER_FILE = ".partial-owner.json"  # inside the partial directory, beside NEW; never part of the output
NEW = "new"  # inside the partial directory: what is written, renamed to DST by the commit
OLD = "old"  # inside the partial directory: the copy of DST the commit replaced, until it is removed
# What mkdtemp puts between ``.NAME.`` and the suffix: no dot, so NAME's partial directories are
# told from those of a NAME.v2 beside it.
RANDOM_PART = re.compile(r"[a-z0-9_]+")
# Where earlier versions moved DST's old copy, after ``.NAME.``, while committing (PID: the writer's).
LEGACY_ASIDE = re.compile(r"replaced-[0-9]+")
# Ctrl-C; what `timeout`, systemd, job schedulers and `kill` send; a closed terminal or ssh session.
INTERRUPTING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STAT_STATE, STAT_STARTED = 0, 19  # fields of /proc/PID/stat after the command name (proc(5): 3 and 22)
ZOMBIE = "Z"  # a process that has exited and not yet been reaped is not writing anything
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")  # a random id per boot of a Linux kernel
MACHINE_ID = Path("/etc/machine-id")  # systemd's id of an installed system, the same across boots
PID_NAMESPACE = Path("/proc/self/ns/pid")  # pids mean the same thing only inside one namespace


class PartialOwner(StrictModel):
    """Who writes a partial directory: enough to tell, later, whether that process still runs."""

    host: str
    machine: str | None  # MACHINE_ID where the system has one: two machines sharing a host name differ
    boot: str | None  # BOOT_ID (Linux); None where the system has no such record
    pid_namespace: str | None
    pid: int
    started: int | None  # the process's start, in clock ticks after boot: a reused pid is told apart

    @classmethod
    def of_process(cls, pid: int) -> PartialOwner:
        """The record of process ``pid`` of this machine and namespace (this process's, for a writer)."""
        return cls(
            host=socket.gethostname(),
            machine=_read(MACHINE_ID),
            boot=_read(BOOT_ID),
            pid_namespace=_pid_namespace(),
            pid=pid,
            started=_started(pid),
        )


class PartialDirectory:
    """A directory built beside ``dst`` and renamed to ``dst`` by :meth:`commit` (replacing what
    was there); leaving the ``with`` block without a commit removes it.

    Creating one first deals with the partial directories earlier, killed writers of ``dst``
    left (see the module's docstring), then records this process as the new one's writer.
    ``path`` is the directory to fill; ``root``, the partial directory that holds it and the record.
    """

    def __init__(self, dst: str | os.PathLike[str]):
        self.dst = Path(dst)
        self.dst.parent.mkdir(parents=True, exist_ok=True)
        clear_stale(self.dst)
        self.root = Path(tempfile.mkdtemp(prefix=f".{self.dst.name}.", suffix=PARTIAL_SUFFIX, dir=self.dst.parent))
        self.path = self.root / NEW  # what the writer fills
        try:
            write_model(self.root / OWNER_FILE, PartialOwner.of_process(os.getpid()))
            self.path.mkdir()
        except BaseException:
            self.discard()
            raise

    def __enter__(self) -> PartialDirectory:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """Remove the directory unless it was committed. A full disk, met here or by a writer
        nested inside (a partition's parts), becomes one line naming what the user asked for,
        not a temporary name inside it; the outermost directory's line is the one shown."""
        self.discard()
        if isinstance(exc, DiskFullError) or (isinstance(exc, OSError) and exc.errno in DISK_FULL):
            reason = exc.reason if isinstance(exc, DiskFullError) else os.strerror(exc.errno or errno.ENOSPC)
            raise DiskFullError(
                f"the disk holding {self.dst.parent} is full ({reason}); nothing was written to {self.dst}. "
                "Free space there or write to a disk with room for it and its temporary files",
                reason,
            ) from None

    def commit(self) -> None:
        """Give the finished directory its name, replacing what was there, then remove the copy
        it replaced.

        That copy is first renamed into this partial directory, beside its writer's record, so
        ``dst`` always holds the old or the new whole directory, and the copy's removal - tens of
        GB, so it can be cut short - is finished by :meth:`discard` (an interrupt's unwinding) or
        by the next writer of ``dst`` (after SIGKILL), and no earlier run's leftover can be in the
        way. The two renames run with interrupts held, since one between them would leave no
        ``dst`` at all. An interrupt that comes once ``dst`` holds the new directory leaves it
        there and says so in a note, which :func:`foundation.cli.handle_interrupts` prints."""
        old = self.root / OLD
        committed = False
        try:
            with interrupts_held():
                if os.path.lexists(self.dst):
                    os.replace(self.dst, old)
                try:
                    os.replace(self.path, self.dst)
                except OSError:
                    if os.path.lexists(old):
                        os.replace(old, self.dst)
                    raise
                committed = True
            fsync_path(self.dst.parent)
            self.discard()
        except KeyboardInterrupt as exc:
            if committed:
                note_kept(exc, self.dst)
            raise

    def discard(self) -> None:
        """Remove the partial directory, if it is still there, with what it holds: the output being
        written or, after the commit, what is left of the copy of ``dst`` it replaced."""
        _remove_partial(self.root)


def note_kept(interrupt: BaseException, path: Path) -> None:
    """Say, on an interrupt that came once ``path`` had been put in place, that it is kept:
    :func:`foundation.cli.handle_interrupts` prints that instead of "nothing was left"."""
    interrupt.add_note(f"{path} had been written in full before that, and is kept")


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """While the block runs, the INTERRUPTING_SIGNALS wait; the first that came is raised again as
    the block ends, and handled as it would have been.

    For a step that an interrupt must not cut in two - the renames that put output in place - and
    that takes an instant, so holding the signal back is not noticed. Python runs signal handlers
    in the main thread only, so a block on any other thread is never interrupted, and is left as
    it is; a signal set to be ignored stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(signum: int, frame: object) -> None:
        arrived.append(signum)

    previous: dict[signal.Signals, Any] = {}  # each handler replaced, once it is (signal.signal can raise)
    try:
        for sig in INTERRUPTING_SIGNALS:
            if signal.getsignal(sig) not in (signal.SIG_IGN, None):
                previous[sig] = signal.signal(sig, hold)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if arrived:
            signal.raise_signal(arrived[0])


def clear_stale(dst: Path) -> None:
    """Remove the partial directories of ``dst`` whose writer is certainly gone; name each one
    that cannot be shown to be stale in a warning (with the command that removes it)."""
    me = PartialOwner.of_process(os.getpid())
    for path in partial_directories(dst):
        owner = _owner(path)
        if owner == me:
            continue
        stale, why = _judge(owner, me)
        if stale:
            _remove_partial(path)
        if path.exists():
            log.warning(
                "%s is partial output of another run writing %s, left in place: %s; "
                "once no run is writing it, remove it with: rm -rf %s",
                path,
                dst,
                why if not stale else "it could not be removed",
                shlex.quote(str(path)),
            )
        else:
            log.info("removed %s, partial output of an earlier run writing %s (%s)", path, dst, why)


def partial_directories(dst: Path) -> list[Path]:
    """The partial directories beside ``dst`` that are ``dst``'s: the hidden ones writers make;
    ``dst.partial``, which `provision` rsyncs a dataset into on a data machine before checking it
    (and earlier versions of `remotegnn fetch` copied into); and ``.NAME.replaced-PID``, where
    earlier versions moved the copy a commit replaced. Neither of the last two records its writer."""
    prefix = f".{dst.name}."
    hidden = [
        path
        for path in dst.parent.glob(f".*{PARTIAL_SUFFIX}")
        if path.name.startswith(prefix) and RANDOM_PART.fullmatch(path.name[len(prefix) : -len(PARTIAL_SUFFIX)])
    ]
    asides = [
        path
        for path in dst.parent.glob(".*.replaced-*")
        if path.name.startswith(prefix) and LEGACY_ASIDE.fullmatch(path.name[len(prefix) :])
    ]
    copied = dst.with_name(dst.name + PARTIAL_SUFFIX)
    return [path for path in [*sorted(hidden), *sorted(asides), copied] if path.is_dir()]


def _remove_partial(path: Path) -> None:
    """Remove a partial directory, if it is there, its writer's record last: cut short (Ctrl-C
    again, SIGKILL), what is left still names its writer, which is then gone, so the next writer
    removes it rather than only reporting it."""
    if not path.is_dir():
        return
    for entry in path.iterdir():
        if entry.name == OWNER_FILE:
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    shutil.rmtree(path, ignore_errors=True)


def fsync_path(path: Path) -> None:
    """Flush a file's, or a directory's entries', writes to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _judge(owner: PartialOwner | None, me: PartialOwner) -> tuple[bool, str]:
    """Whether ``owner``, recorded in a partial directory, is certainly gone, and why (or why
    that cannot be told)."""
    if owner is None:
        return False, "it does not record which process writes it"
    if owner.boot is None or me.boot is None:
        return False, f"this system keeps no boot id to tell whether pid {owner.pid} on {owner.host} is its writer"
    if owner.boot != me.boot:
        if owner.host == me.host and owner.machine == me.machine and me.machine is not None:
            return True, f"{me.host} has restarted since"
        return False, f"its writer, pid {owner.pid} on {owner.host}, ran on another machine or before a restart"
    if owner.pid_namespace != me.pid_namespace:
        return False, f"its writer, pid {owner.pid}, ran in another container on {me.host}, out of sight here"
    running = _started(owner.pid)
    if running is None:
        return True, f"its writer, pid {owner.pid}, is gone"
    if running != owner.started:
        return True, f"its writer, pid {owner.pid}, is gone (the pid now belongs to another process)"
    return False, f"its writer, pid {owner.pid}, is still running"


def _owner(path: Path) -> PartialOwner | None:
    try:
        return PartialOwner.model_validate_json((path / OWNER_FILE).read_bytes())
    except (OSError, ValidationError):
        return None


def _started(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot); None when no such process runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[STAT_STATE] == ZOMBIE else int(fields[STAT_STARTED])


def _pid_namespace() -> str | None:
    try:
        return os.readlink(PID_NAMESPACE)
    except OSError:
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
