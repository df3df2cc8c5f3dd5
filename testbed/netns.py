"""The emulated network: one namespace per host, joined by veth to a bridge in a switch namespace.

Each host's veth is shaped by ``tbf`` at both ends - the host's end limits what it sends, the
switch's end what it receives - so every host gets its instance's bandwidth in each direction,
and a learner fed by two memory hosts is still limited by its own NIC, as in the cloud.
"""

from __future__ import annotations

import json
from pathlib import Path

from contracts.testbed import Host, TestbedState
from testbed.errors import TestbedError
from testbed.system import run

NETNS_DIR = Path("/run/netns")  # where `ip netns add` mounts a namespace (iproute2's fixed path)
BRIDGE = "br0"
HOST_IF = "eth0"
TBF_LATENCY = "10ms"  # longest a packet may queue in tbf before it is dropped
MIN_BURST = 1 << 20
# A bucket smaller than this starves: with 256 KiB at both ends of a 1 Gbit/s link the second tbf
# dropped the first one's GSO bursts and TCP got 0.85-0.89 Gbit/s; with 1 MiB, 0.96 (the payload's
# share of a 1500-byte frame is 0.96), at 2 and 5 Gbit/s 0.96 and 0.94 of the rate.


def namespaces(prefix: str) -> list[str]:
    """Namespaces whose names start with ``prefix``."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(prefix))


def exists(namespace: str) -> bool:
    return (NETNS_DIR / namespace).exists()


def add_namespace(namespace: str) -> None:
    if exists(namespace):
        raise TestbedError(
            f"namespace {namespace} already exists and is not this testbed's: remove it "
            f"(`ip netns delete {namespace}`) or pick another --name"
        )
    run(["ip", "netns", "add", namespace], f"creating namespace {namespace}")
    run(["ip", "-n", namespace, "link", "set", "lo", "up"], f"bringing up lo in {namespace}")


def delete_namespace(namespace: str) -> None:
    """Delete a namespace (its links go with it); a missing one is already deleted."""
    if exists(namespace):
        run(["ip", "netns", "delete", namespace], f"deleting namespace {namespace}")


def add_bridge(switch: str) -> None:
    run(["ip", "-n", switch, "link", "add", "name", BRIDGE, "type", "bridge"], f"creating the bridge in {switch}")
    run(["ip", "-n", switch, "link", "set", BRIDGE, "up"], f"bringing up the bridge in {switch}")


def connect(state: TestbedState, host: Host) -> None:
    """Join ``host`` to the switch: a veth made inside the two namespaces, addressed and shaped."""
    sw, ns = state.switch, host.namespace
    run(
        ["ip", "-n", sw, "link", "add", "name", host.port, "type", "veth", "peer", "name", HOST_IF, "netns", ns],
        f"creating the veth between {sw} and {ns}",
    )
    run(["ip", "-n", sw, "link", "set", host.port, "master", BRIDGE, "up"], f"attaching {host.port} to the bridge")
    run(
        ["ip", "-n", ns, "addr", "add", f"{host.address}/{state.spec.subnet.prefixlen}", "dev", HOST_IF],
        f"addressing {host.name}",
    )
    run(["ip", "-n", ns, "link", "set", HOST_IF, "up"], f"bringing up {host.name}'s {HOST_IF}")
    set_rate(ns, HOST_IF, host.gbit)
    set_rate(sw, host.port, host.gbit)


def set_rate(namespace: str, device: str, gbit: float) -> None:
    bits = round(gbit * 1e9)
    burst = max(MIN_BURST, bits // 8 // 1000)  # at least a millisecond's worth
    run(
        [
            "tc",
            "-n",
            namespace,
            "qdisc",
            "replace",
            "dev",
            device,
            "root",
            "tbf",
            "rate",
            f"{bits}bit",
            "burst",
            str(burst),
            "latency",
            TBF_LATENCY,
        ],
        f"limiting {device} in {namespace} to {gbit} Gbit/s",
    )


def rate(namespace: str, device: str) -> float | None:
    """The tbf rate on ``device`` in Gbit/s as the kernel holds it, None without a tbf."""
    out = run(["tc", "-j", "-n", namespace, "qdisc", "show", "dev", device], f"reading {device}'s qdisc")
    for qdisc in json.loads(out or "[]"):
        if qdisc.get("kind") == "tbf" and qdisc.get("root"):
            return qdisc["options"]["rate"] * 8 / 1e9  # tc reports bytes per second
    return None
