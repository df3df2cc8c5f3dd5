"""Waiting until every machine has finished its boot script, before anything is copied to it.

A machine is ready when its boot status reads ``ok``. ``failed`` (with the reason, where the script
knows it) stops the job at once with the tail of that machine's boot log; a machine that does not
answer ssh yet (still booting) or has not started the script is polled again until the deadline.
One whose status reads ``waiting-for-wheel`` gets the cluster's MemoryBridge wheel (the copy `up`
kept, checked against the sha256 in the state file first), which its boot script checks again
before installing it.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from pathlib import Path

from contracts.cluster import NodeState, ShippedWheel
from provisioning import userdata
from provisioning.aws import Timing
from provisioning.errors import ProvisioningError
from provisioning.job.models import MachineLayout
from provisioning.job.remote import Remote, RemoteError
from provisioning.wheel import sha256_of

LOG_TAIL_LINES = 20
WHEEL_COPY_S = 600.0  # a wheel of a few MB, over the slowest link a user might run `provision` from
BOOT_DEADLINE_S = 1800.0  # the DLAMI learner takes up to ~15 min to install Python, torch and MPI


class BootFailedError(ProvisioningError):
    """A machine's boot script failed: nothing can run on it."""


def status_command(layout: MachineLayout) -> str:
    """Prints the boot status word, or ``pending`` when the script has not written one yet."""
    return f"cat {shlex.quote(layout.boot_status)} 2>/dev/null || echo pending"


def kept_wheel(wheels: Path, wheel: ShippedWheel) -> Path:
    """The wheel `up` kept for the cluster, unchanged since (its sha256 is the state file's)."""
    path = wheels / wheel.file
    if not path.is_file():
        raise ProvisioningError(
            f"the cluster's wheel {path} is missing; its machines wait for it. Copy the same file there "
            f"(sha256 {wheel.sha256}), or run `provision down` and `up` again"
        )
    if sha256_of(path) != wheel.sha256:
        raise ProvisioningError(
            f"{path} changed since `provision up` (its sha256 is not {wheel.sha256}); the machines would refuse "
            "it. Put the original back, or run `provision down` and `up` again"
        )
    return path


def push_wheel(remote: Remote, layout: MachineLayout, node: NodeState, wheel: Path) -> None:
    """Copy the wheel into the machine's wheel directory (rsync renames it into place whole)."""
    remote.rsync(str(wheel), f"{remote.target(node)}:{layout.wheel_dir}/{wheel.name}", timeout_s=WHEEL_COPY_S)


def wait_booted(
    remote: Remote,
    layout: MachineLayout,
    timing: Timing,
    report: Callable[[str], None],
    deadline_s: float = BOOT_DEADLINE_S,
    wheels: Path | None = None,
) -> None:
    """Return once every machine's boot status is ok, giving the wheel (from ``wheels``) to each
    machine that waits for it; raise on a failed boot or at the deadline."""
    wheel = remote.state.wheel
    waiting = {node.node: node for node in remote.state.nodes}
    last: dict[str, str] = {}
    give_up = time.monotonic() + deadline_s
    while True:
        for name, node in list(waiting.items()):
            try:
                word = remote.run(node, status_command(layout), timeout_s=60).strip() or "pending"
            except RemoteError as exc:
                word = f"unreachable ({exc})"
            if word != last.get(name):
                report(f"{name}: boot {word}")
                last[name] = word
            if word == userdata.BOOT_OK:
                del waiting[name]
            elif word == userdata.BOOT_WAITING_FOR_WHEEL and wheel is not None and wheels is not None:
                push_wheel(remote, layout, node, kept_wheel(wheels, wheel))
                report(f"{name}: sent {wheel.file}")
            elif word.startswith(userdata.BOOT_FAILED):
                tail = remote.run(node, f"tail -n {LOG_TAIL_LINES} {shlex.quote(layout.init_log)}", timeout_s=60)
                reason = word.removeprefix(userdata.BOOT_FAILED).lstrip(": ")
                why = f": {reason}" if reason else ""
                raise BootFailedError(
                    f"{name} ({node.instance_id}): its boot script failed{why}; the last lines of "
                    f"{layout.init_log}:\n{tail.rstrip()}\nRun `provision down {remote.state.name}` and up again, "
                    "or fix the machine by hand"
                )
        if not waiting:
            return
        if time.monotonic() > give_up:
            raise ProvisioningError(
                f"{', '.join(sorted(waiting))} did not finish booting within {deadline_s / 60:.0f} min "
                f"(last status: {', '.join(last[n] for n in sorted(waiting))})"
            )
        time.sleep(timing.poll_s)  # polling interval of a bounded wait, not synchronisation
