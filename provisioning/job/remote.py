"""Reaching the cluster's machines: the standard ssh client, or a command the user names instead.

Host keys are checked. EC2 prints each machine's host keys to its console at first boot; they are
written to the cluster's own known_hosts file (``STATE_DIR/NAME/known_hosts``) before the first
connection, so ssh can check them strictly. Where the console does not show them (some images, or
a console read that is not allowed), the first contact records the key and every later one must
match it (``StrictHostKeyChecking=accept-new``): a machine's key can never change silently.

``--ssh-command`` replaces ``ssh`` and its options (a jump host, another client, or a test's hosts):
it is called as ``COMMAND USER@HOST REMOTE-COMMAND``, as ssh is, and rsync gets it with ``-e``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from contracts.cluster import ClusterState, NodeState
from provisioning.errors import ProvisioningError

CONNECT_TIMEOUT_S = 15
# cloud-init prints the host keys between these lines on the console at first boot.
HOST_KEYS_BLOCK = re.compile(r"-----BEGIN SSH HOST KEY KEYS-----\n(.*?)-----END SSH HOST KEY KEYS-----", re.DOTALL)


class RemoteError(ProvisioningError):
    """A command on a machine could not be run, or failed."""


@dataclass(frozen=True)
class Remote:
    """How to run commands on the cluster's machines and copy files to and from them."""

    state: ClusterState
    ssh: tuple[str, ...]  # the client and its options, called as ``ssh USER@HOST COMMAND``

    @classmethod
    def for_cluster(
        cls, state: ClusterState, known_hosts: Path, key_file: Path | None, ssh_command: str | None
    ) -> Remote:
        if ssh_command:
            return cls(state, tuple(shlex.split(ssh_command)))
        options = [
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={CONNECT_TIMEOUT_S}",
            "-o",
            f"UserKnownHostsFile={known_hosts}",
            "-o",
            "StrictHostKeyChecking=accept-new",
        ]
        if key_file is not None:
            options += ["-i", str(key_file), "-o", "IdentitiesOnly=yes"]
        return cls(state, ("ssh", *options))

    def target(self, node: NodeState) -> str:
        return f"{self.state.ssh_user}@{node.public_ip or node.private_ip}"

    def argv(self, node: NodeState, command: str) -> list[str]:
        """The local argv that runs the shell ``command`` on ``node``."""
        return [*self.ssh, self.target(node), command]

    def run(self, node: NodeState, command: str, stdin: str | None = None, timeout_s: float = 600.0) -> str:
        """Run ``command`` on ``node`` and return its stdout; a failure raises with stderr's tail."""
        try:
            done = subprocess.run(
                self.argv(node, command), input=stdin, capture_output=True, text=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            raise RemoteError(f"{node.node}: `{command}` did not finish within {timeout_s:.0f} s") from None
        except OSError as exc:
            raise RemoteError(f"cannot run {self.ssh[0]}: {exc.strerror}") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise RemoteError(f"{node.node}: `{command}` exited with {done.returncode}: {' | '.join(tail)}")
        return done.stdout

    def reachable(self, node: NodeState) -> bool:
        """True when a trivial command runs on ``node`` (it answers ssh and our key)."""
        try:
            return (
                subprocess.run(self.argv(node, "true"), capture_output=True, timeout=CONNECT_TIMEOUT_S * 2).returncode
                == 0
            )
        except subprocess.TimeoutExpired:
            return False

    def rsync(self, source: str, destination: str, timeout_s: float) -> None:
        """``rsync -a --delete`` between this computer and a machine (``USER@HOST:PATH`` on one side)."""
        argv = [
            "rsync",
            "-a",
            "--delete",
            "--partial-dir=.rsync-partial",
            "-e",
            shlex.join(self.ssh),
            source,
            destination,
        ]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RemoteError(f"copying {source} to {destination} took over {timeout_s:.0f} s") from None
        except OSError as exc:
            raise RemoteError(f"cannot run rsync ({exc.strerror}); install it (apt/dnf install rsync)") from None
        if done.returncode != 0:
            raise RemoteError(f"rsync {source} -> {destination} exited with {done.returncode}: {done.stderr.strip()}")


def learn_host_keys(console_output: str, addresses: list[str]) -> list[str]:
    """known_hosts lines for ``addresses`` from a machine's console output (none if it shows no keys)."""
    found = HOST_KEYS_BLOCK.search(console_output)
    if not found:
        return []
    keys = [line.split()[:2] for line in found.group(1).splitlines() if line.strip() and not line.startswith("#")]
    return [f"{','.join(addresses)} {kind} {key}" for kind, key in keys if kind and key]
