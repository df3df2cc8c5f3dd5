"""Waiting until every machine has finished its boot script, before anything is copied to it.

A machine is ready when its boot status reads ``ok``. ``failed`` stops the job at once with the
tail of that machine's boot log; a machine that does not answer ssh yet (still booting) or has not
started the script is polled again until the deadline.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable

from provisioning import userdata
from provisioning.aws import Timing
from provisioning.errors import ProvisioningError
from provisioning.job.models import MachineLayout
from provisioning.job.remote import Remote, RemoteError

LOG_TAIL_LINES = 20
BOOT_DEADLINE_S = 1800.0  # the DLAMI learner takes up to ~15 min to install Python, torch and MPI


class BootFailedError(ProvisioningError):
    """A machine's boot script failed: nothing can run on it."""


def status_command(layout: MachineLayout) -> str:
    """Prints the boot status word, or ``pending`` when the script has not written one yet."""
    return f"cat {shlex.quote(layout.boot_status)} 2>/dev/null || echo pending"


def wait_booted(
    remote: Remote,
    layout: MachineLayout,
    timing: Timing,
    report: Callable[[str], None],
    deadline_s: float = BOOT_DEADLINE_S,
) -> None:
    """Return once every machine's boot status is ok; raise on a failed boot or at the deadline."""
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
            elif word == userdata.BOOT_FAILED:
                tail = remote.run(node, f"tail -n {LOG_TAIL_LINES} {shlex.quote(layout.init_log)}", timeout_s=60)
                raise BootFailedError(
                    f"{name} ({node.instance_id}): its boot script failed; the last lines of "
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
