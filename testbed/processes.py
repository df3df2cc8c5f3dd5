"""Finding and stopping every process on a testbed's hosts.

A process belongs to a host when its network namespace is the host's (so forked workers, MPI
daemons and whatever a job left behind are all found, whoever their parent is) or when it sits
in a memory host's blkio group. ``stop`` sends SIGTERM, so mpiexec and its daemons can clean up,
then SIGKILL to what is left, and waits on pidfds - the kernel says when each has exited.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Iterable
from pathlib import Path

from testbed.errors import TestbedError
from testbed.netns import NETNS_DIR

GRACE_S = 3.0  # how long SIGTERMed processes get to exit before SIGKILL
KILL_ROUNDS = 3  # a dying process may still fork; each round catches what the last one missed
UNINTERRUPTIBLE_WAIT_S = 240.0
"""How long SIGKILLed processes still get: one blocked in the kernel (state D, e.g. a read behind a
throttled volume) dies only when that I/O completes, which a slow blkio group can stretch to
seconds. A job that finished must not be reported failed because its reader was mid-read; waiting
costs nothing when every process exits at once."""


class Scope:
    """The processes of some namespaces and blkio groups. The namespaces are identified by inode
    when the scope is made, so their processes are still found after `ip netns delete`."""

    def __init__(self, namespaces: Iterable[str], groups: Iterable[Path] = ()):
        self.groups = list(groups)
        self.targets = set()
        for name in namespaces:
            try:
                st = os.stat(NETNS_DIR / name)
            except FileNotFoundError:
                continue
            self.targets.add((st.st_dev, st.st_ino))

    def contains(self, pid: int) -> bool:
        try:
            st = os.stat(f"/proc/{pid}/ns/net")
        except OSError:
            # Exited, or a zombie, which has no namespaces. A group still lists a process whose
            # main thread exited while its other threads finish (a reader thread mid-read behind
            # a throttled volume): it is ours until the group lets it go.
            return pid in self._grouped()
        return (st.st_dev, st.st_ino) in self.targets or pid in self._grouped()

    def pids(self) -> set[int]:
        found = self._grouped()
        if self.targets:
            for entry in os.scandir("/proc"):
                if entry.name.isdigit():
                    try:
                        st = os.stat(f"/proc/{entry.name}/ns/net")
                    except OSError:
                        continue
                    if (st.st_dev, st.st_ino) in self.targets:
                        found.add(int(entry.name))
        return found - {os.getpid()}

    def _grouped(self) -> set[int]:
        found: set[int] = set()
        for group in self.groups:
            try:
                found.update(int(pid) for pid in (group / "cgroup.procs").read_text().split())
            except FileNotFoundError:
                continue
        return found


def stop(scope: Scope, grace_s: float = GRACE_S) -> int:
    """Stop every process in ``scope`` until none is left; the count of processes signalled."""
    signalled: set[int] = set()
    for round_ in range(KILL_ROUNDS + 1):
        pids = scope.pids()
        if not pids:
            return len(signalled)
        if round_ == KILL_ROUNDS:
            break
        sig = signal.SIGTERM if round_ == 0 else signal.SIGKILL
        fds = []
        for pid in pids:
            fd = _signal(pid, sig, scope)
            if fd is not None:
                fds.append(fd)
                signalled.add(pid)
        _wait(fds, grace_s)
    _wait([fd for pid in pids if (fd := _pidfd(pid, scope)) is not None], UNINTERRUPTIBLE_WAIT_S)
    pids = scope.pids()
    if not pids:
        return len(signalled)
    raise TestbedError(
        f"processes {sorted(pids)} survived SIGKILL; find them with `ps -o pid,stat,cmd -p "
        f"{','.join(map(str, sorted(pids)))}` (a process stuck in the kernel, state D, exits when its I/O does)"
    )


def _pidfd(pid: int, scope: Scope) -> int | None:
    """A pidfd of ``pid``, which pins the process: a pid reused by another process after ours
    exited is never signalled or waited for. None if it is gone."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return None
    if not scope.contains(pid):  # it exited (and its pid may be reused) before the pidfd pinned it
        os.close(fd)
        return None
    return fd


def _signal(pid: int, sig: int, scope: Scope) -> int | None:
    """Signal ``pid`` through its pidfd (see ``_pidfd``); the pidfd, or None if it is gone."""
    fd = _pidfd(pid, scope)
    if fd is None:
        return None
    try:
        signal.pidfd_send_signal(fd, sig)
    except ProcessLookupError:
        os.close(fd)
        return None
    return fd


def _wait(fds: list[int], timeout_s: float) -> None:
    """Wait until every pidfd reports its process exited, or ``timeout_s`` passes; close them."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    pending = set(fds)
    deadline = time.monotonic() + timeout_s
    try:
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for fd, _ in poller.poll(left * 1000):
                poller.unregister(fd)
                pending.discard(fd)
    finally:
        for fd in fds:
            os.close(fd)
