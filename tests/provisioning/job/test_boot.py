"""Waiting for the machines' boot scripts, read over the (overridden) ssh command."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from provisioning import userdata
from provisioning.aws import Timing
from provisioning.errors import ProvisioningError
from provisioning.job.boot import BootFailedError, wait_booted
from provisioning.job.remote import Remote
from tests.provisioning.conftest import make_wheel

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


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils' sha256sum")
def test_a_machine_waiting_for_the_wheel_gets_it_checks_it_and_boots(tmp_path, remote, layout):
    # The real boot script (stub dnf and Python) runs on this "machine"; the poller, seeing it wait,
    # copies the kept wheel over the ssh stand-in, and the script checks and installs it.
    from contracts.cluster import ShippedWheel
    from provisioning.wheel import sha256_of
    from tests.provisioning.boot_stand_in import stand_in

    wheels = tmp_path / "kept"
    built = make_wheel(wheels)
    shipped = ShippedWheel(file=built.name, sha256=sha256_of(built), version="0.1.0")
    remote = Remote(remote.state.model_copy(update={"wheel": shipped}), remote.ssh)
    machine = stand_in(
        tmp_path, shipped, init_log=layout.init_log, boot_status=layout.boot_status, wheel_dir=layout.wheel_dir
    )
    boot = subprocess.Popen(machine.command, env=machine.env)
    said: list[str] = []
    try:
        wait_booted(remote, layout, Timing(poll_s=0.2), said.append, deadline_s=120, wheels=wheels)
    finally:
        boot.wait(timeout=60)
    assert boot.returncode == 0 and Path(layout.boot_status).read_text().strip() == userdata.BOOT_OK
    assert "learner-0: boot waiting-for-wheel" in said and f"learner-0: sent {built.name}" in said
    assert (Path(machine.paths.etc_dir) / "version").read_text().strip() == "0.1.0"


def test_a_kept_wheel_that_changed_is_not_sent(tmp_path, remote, layout):
    from contracts.cluster import ShippedWheel

    wheels = tmp_path / "kept"
    built = make_wheel(wheels)
    shipped = ShippedWheel(file=built.name, sha256="0" * 64, version="0.1.0")
    remote = Remote(remote.state.model_copy(update={"wheel": shipped}), remote.ssh)
    Path(layout.boot_status).write_text(userdata.BOOT_WAITING_FOR_WHEEL)
    with pytest.raises(ProvisioningError, match="changed since `provision up`"):
        wait_booted(remote, layout, FAST, lambda _: None, deadline_s=30, wheels=wheels)
    assert not Path(layout.wheel_dir).exists()


def test_the_reason_of_a_failed_boot_is_shown(remote, layout):
    Path(layout.boot_status).write_text("failed: wheel sha256 mismatch: memorybridge-0.1.0-py3-none-any.whl is 12ab\n")
    Path(layout.init_log).write_text("wheel sha256 mismatch\n")
    with pytest.raises(BootFailedError, match="its boot script failed: wheel sha256 mismatch"):
        wait_booted(remote, layout, FAST, lambda _: None, deadline_s=30)
