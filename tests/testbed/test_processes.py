"""Which processes a testbed's scope holds: a process whose main thread has exited while another
thread still runs is a zombie leader with no namespaces, yet its blkio group still lists it, and
stopping the testbed must wait for it rather than report it as a survivor."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from testbed.processes import Scope

# The main thread exits through pthread_exit while a second thread waits on stdin: the process
# lives on as a zombie leader with one running thread.
LEADER_EXITS_FIRST = textwrap.dedent(
    """
    import ctypes, sys, threading
    threading.Thread(target=sys.stdin.read).start()
    print("ready", flush=True)
    ctypes.CDLL(None).pthread_exit(None)
    """
)


@pytest.fixture
def zombie_leader():
    child = subprocess.Popen(
        [sys.executable, "-c", LEADER_EXITS_FIRST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline() == "ready\n"
    yield child.pid
    child.stdin.close()  # the waiting thread reads EOF and the process ends
    child.wait(timeout=30)


def test_a_grouped_process_whose_main_thread_exited_is_still_in_scope(zombie_leader, tmp_path):
    (tmp_path / "cgroup.procs").write_text(f"{zombie_leader}\n")
    assert Scope([], [tmp_path]).contains(zombie_leader)
    assert not Scope([], []).contains(zombie_leader)  # in neither a namespace nor a group
