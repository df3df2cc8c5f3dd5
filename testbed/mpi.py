"""MPI across the testbed's namespaces: one mpiexec, a fake ssh agent, a hostfile.

Open MPI starts a daemon on each remote host through an ssh "agent"; the testbed's agent
(docs/testbed.md, "Jobs") maps a host's address to its
network namespace instead (``nsenter --net``), puts a host's processes in its cgroups (a memory
host's blkio group, a learner host's memory group), and mounts a memory host's own loop device of
the dataset's image where it has one (``testbed.volume``). The
job is started from the first learner host, as it would be from the cloud's first learning
machine, so mpiexec itself runs there too (``write_mpiexec``). Ranks are placed by the hostfile:
memory hosts first, one slot each, then the learner hosts, so in an MPMD command whose first app
context is the memory ranks' (``remotegnn launch``'s), memory rank i runs on host m<i> and the
learner ranks fill l0, l1, ... in turn.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from contracts.testbed import Host, TestbedState
from foundation.fileio import atomic_write_text
from testbed.netns import LISTEN_PORT_MIN, LISTEN_PORTS, NETNS_DIR

AGENT = "agent"

_AGENT_SCRIPT = """#!/bin/bash
# Open MPI's ssh launcher for testbed {name}, written by `testbed up` (do not edit).
# Called as `agent HOST COMMAND...`, it runs COMMAND as ssh would (the words joined and run by a
# shell) in HOST's network namespace - inside the host's cgroups (a memory host's blkio group,
# a learner host's memory group) - with
# a private /dev/shm, which the kernel frees when the last process of the call has exited, and,
# on a memory host with a loop device of its own, the dataset's image mounted from that device
# (its own page cache, gone with the call's last process too).
# nsenter, not `ip netns exec`: that one remounts /sys, hiding the cgroup tree from mpiexec,
# which runs on l0 and calls this agent for the other hosts.
loop=
case "$1" in
{cases}
  *) echo "testbed {name} has no host '$1'; its hosts are {hosts}" >&2; exit 255 ;;
esac
shift
for group in $groups; do echo $$ > "$group/cgroup.procs" || exit 255; done
exec nsenter --net="$ns" unshare --mount --propagation slave /bin/bash -c '
  mount -t tmpfs -o mode=1777 testbed-shm /dev/shm || exit 255
  if [ -n "$2" ]; then mount -o ro "$2" "$3" || exit 255; fi
  exec /bin/bash -c "$1"' agent "$*" "$loop" "$mountpoint"
"""

_MPIEXEC_SCRIPT = """#!/bin/bash
# mpiexec for testbed {name}: runs {mpiexec} on the first learner host {host} (written for one job).
exec {agent} {host} "$(printf '%q ' {mpiexec} "$@")"
"""


def host_groups(state: TestbedState, host: Host) -> list[Path]:
    """The cgroups the agent puts ``host``'s processes in. Open MPI starts every other host's
    daemon from l0, so a host without a memory group of its own is moved back to the one the
    learners' groups were made in: left in l0's, it would be charged to l0's RAM."""
    learner_group = state.learner.memory_cgroup
    if host.memory_cgroup is None and learner_group is not None:
        return [*host.groups, learner_group.parent]
    return host.groups


def write_agent(state: TestbedState, directory: Path) -> Path:
    cases = "\n".join(
        f"  {h.address}|{h.name}) ns={shlex.quote(str(NETNS_DIR / h.namespace))}; "
        f"groups={shlex.quote(' '.join(str(g) for g in host_groups(state, h)))}{_loop_mount(state, h)} ;;"
        for h in state.hosts
    )
    hosts = ", ".join(f"{h.name} ({h.address})" for h in state.hosts)
    return _write_script(directory / AGENT, _AGENT_SCRIPT.format(name=state.name, cases=cases, hosts=hosts))


def _loop_mount(state: TestbedState, host: Host) -> str:
    """The agent's assignments mounting ``host``'s own loop device of the dataset's image, if it has one."""
    if host.loop is None or state.volume is None or state.volume.mountpoint is None:
        return ""
    return f"; loop={shlex.quote(str(host.loop))}; mountpoint={shlex.quote(str(state.volume.mountpoint))}"


def write_mpiexec(state: TestbedState, agent: Path, mpiexec: Path, directory: Path) -> Path:
    """A script that stands in for mpiexec and runs the real one on the first learner host."""
    text = _MPIEXEC_SCRIPT.format(
        name=state.name, host=state.learner.address, agent=shlex.quote(str(agent)), mpiexec=shlex.quote(str(mpiexec))
    )
    return _write_script(directory / "mpiexec", text)


def write_hostfile(state: TestbedState, learners: int, directory: Path) -> Path:
    """Memory hosts first, one slot each, then the learner hosts with ``learners`` slots spread
    over them as evenly as they go (the first hosts take one more where they do not divide; a
    host left none is left out)."""
    hosts = state.learners
    share, extra = divmod(learners, len(hosts))
    slots = [share + (i < extra) for i in range(len(hosts))]
    lines = [f"{h.address} slots=1" for h in state.memory]
    lines += [f"{h.address} slots={n}" for h, n in zip(hosts, slots, strict=True) if n]
    return atomic_write_text(directory / "hostfile", "\n".join(lines) + "\n")


def mpi_args(state: TestbedState, agent: Path, tmpdir: Path) -> list[str]:
    """mpiexec options that keep every connection on the testbed's links (docs/testbed.md, "Jobs").

    The daemons and ranks talk TCP over the subnet only; ``coll ^han,sm`` because every host has
    the machine's hostname, which would make those collectives take all ranks for one node and
    hang; Open MPI's session directory goes under the testbed's state, so what a killed job leaves
    there goes at `down`.
    """
    subnet = str(state.spec.subnet)
    args = [
        "--prtemca",
        "plm_ssh_agent",
        str(agent),
        "--prtemca",
        "oob_tcp_if_include",
        subnet,
        "--prtemca",
        "prte_tmpdir_base",
        str(tmpdir),
        "--mca",
        "pml",
        "ob1",
        "--mca",
        "btl",
        "tcp,self",
        "--mca",
        "btl_tcp_if_include",
        subnet,
        "--mca",
        "coll",
        "^han,sm",
        "-x",
        "PATH",
    ]
    if state.spec.flow_gbit is not None:  # listen below every host's source ports (netns.port_range)
        args += [
            "--mca",
            "btl_tcp_port_min_v4",
            str(LISTEN_PORT_MIN),
            "--mca",
            "btl_tcp_port_range_v4",
            str(LISTEN_PORTS),
        ]
    return args + ["-x", "PYTHONPATH"] if "PYTHONPATH" in os.environ else args


def _write_script(path: Path, text: str) -> Path:
    atomic_write_text(path, text)
    path.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return path
