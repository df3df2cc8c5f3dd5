"""Waiting for the machines' boot scripts, read over the (overridden) ssh command."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from provisioning import userdata
from provisioning.aws import Timing
from provisioning.errors import ProvisioningError
from provisioning.job.boot import BootFailedError, wait_booted
from provisioning.job.remote import Remote

FAST = Timing(poll_s=0.01)


def test_every_machine_ok_returns_and_says_so(remote, layout):
    Path(layout.boot_status).write_text(userdata.BOOT_OK + "\n")
    said: list[str] = []
    wait_booted(remote, layout, FAST, said.append, deadline_s=30)
    assert said == ["learner-0: boot ok", "memory-0: boot ok"]


def test_a_failed_boot_is_reported_with_its_log_tail(remote, layout):
    Path(layout.boot_status).write_text(userdata.BOOT_FAILED + "\n")
    Path(layout.init_log).write_text("".join(f"step {i}\n" for i in range(40)) + "pip: no matching distribution\n")
    with pytest.raises(BootFailedError) as failed:
        wait_booted(remote, layout, FAST, lambda _: None, deadline_s=30)
    message = str(failed.value)
    assert "learner-0" in message and "pip: no matching distribution" in message
    assert "step 25" in message and "step 5\n" not in message  # the tail, not the whole log


def test_pending_machines_are_polled_until_ok(remote, layout):
    said: list[str] = []
    ready = threading.Event()

    def report(line: str) -> None:
        said.append(line)
        if line.endswith("boot pending") and len(said) == 2:
            ready.set()

    def finish_boot() -> None:
        ready.wait(30)
        Path(layout.boot_status).write_text(userdata.BOOT_OK)

    finisher = threading.Thread(target=finish_boot)
    finisher.start()
    wait_booted(remote, layout, FAST, report, deadline_s=60)
    finisher.join()
    assert said[:2] == ["learner-0: boot pending", "memory-0: boot pending"]
    assert said[2:] == ["learner-0: boot ok", "memory-0: boot ok"]


def test_an_unreachable_machine_times_out_with_its_last_status(tmp_path, layout):
    from tests.provisioning.job.conftest import cluster_state

    state = cluster_state(tmp_path / "hostfile")
    unreachable = Remote(state, ("false",))
    with pytest.raises(ProvisioningError, match="did not finish booting") as late:
        wait_booted(unreachable, layout, FAST, lambda _: None, deadline_s=0.05)
    assert "unreachable" in str(late.value)
