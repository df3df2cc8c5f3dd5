"""Fixtures for PINCH's kernel programs: a skip where they cannot load, and throwaway namespaces.

The namespaces are real (``ip netns``), named ``pinchtest-<random>`` and deleted after each test
even when it fails; their devices go with them, and so do the programs attached there.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fullgraph.exchange.pinch.kernel import bpf_available

AGENT = Path(__file__).with_name("agent.py")
SUBNET = "10.231.0"
PREFIX_LEN = 24
HOST_IF = "eth0"
BRIDGE = "br0"
DEFAULT_MTU = 1500
RUN_TIMEOUT = 30  # seconds any agent or ip command may take


@pytest.fixture(scope="session")
def bpf() -> None:
    reason = bpf_available()
    if reason is not None:
        pytest.skip(f"PINCH's kernel programs cannot be loaded here: {reason}")


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=RUN_TIMEOUT).stdout


@dataclass
class Host:
    namespace: str
    address: str
    mac: bytes

    def run(self, *argv: str) -> str:
        """A command inside this host's namespace; its stdout."""
        result = subprocess.run(
            ["ip", "netns", "exec", self.namespace, *argv], capture_output=True, text=True, timeout=RUN_TIMEOUT
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def agent(self, *args: str) -> subprocess.Popen:
        """tests/fullgraph/exchange/pinch/agent.py in this namespace, stdin and stdout piped."""
        return subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, sys.executable, str(AGENT), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def link(self) -> dict:
        return json.loads(ip("-n", self.namespace, "-j", "link", "show", HOST_IF))[0]

    def knows(self, other: Host) -> None:
        """A permanent neighbour entry, so nothing waits on ARP."""
        ip("-n", self.namespace, "neigh", "replace", other.address, "lladdr", other.mac.hex(":"), "dev", HOST_IF)


@pytest.fixture
def lan(bpf):
    """``lan(n, mtu)``: n hosts (``eth0`` each, 10.231.0.1...) on one bridge in a switch namespace."""
    made: list[str] = []

    def add(name: str) -> str:
        ip("netns", "add", name)
        made.append(name)
        ip("-n", name, "link", "set", "lo", "up")
        return name

    def build(n: int, mtu: int = DEFAULT_MTU) -> list[Host]:
        tag = f"pinchtest-{secrets.token_hex(4)}"
        switch = add(f"{tag}-sw")
        ip("-n", switch, "link", "add", BRIDGE, "type", "bridge")
        ip("-n", switch, "link", "set", BRIDGE, "up")
        hosts = []
        for i in range(n):
            namespace, port = add(f"{tag}-h{i}"), f"h{i}"
            ip("link", "add", HOST_IF, "netns", namespace, "type", "veth", "peer", "name", port, "netns", switch)
            ip("-n", switch, "link", "set", port, "mtu", str(mtu), "master", BRIDGE, "up")
            address = f"{SUBNET}.{i + 1}"
            ip("-n", namespace, "addr", "add", f"{address}/{PREFIX_LEN}", "dev", HOST_IF)
            ip("-n", namespace, "link", "set", HOST_IF, "mtu", str(mtu), "up")
            host = Host(namespace, address, b"")
            host.mac = bytes.fromhex(host.link()["address"].replace(":", ""))
            hosts.append(host)
        for host in hosts:
            for other in hosts:
                if other is not host:
                    host.knows(other)
        return hosts

    yield build
    for name in reversed(made):
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=RUN_TIMEOUT)
