"""The emulated network: one namespace per host, joined by veth to a bridge in a switch namespace.

Each host's veth is shaped by ``tbf`` at both ends - the host's end limits what it sends, the
switch's end what it receives - so every host gets its instance's bandwidth in each direction,
and a learner fed by two memory hosts is still limited by its own NIC, as in the cloud.

With a per-flow cap (``--flow-gbit``: AWS carries at most 10 Gbit/s on one TCP flow in a cluster
placement group) a host's sending end is ``htb`` instead: the link's rate for everything, and
under it one class per TCP flow at the cap. This kernel has neither ``fq`` (whose ``maxrate``
would cap each flow) nor the ``flow`` classifier, so flows are told apart by port with ``u32``:
each host's outgoing connections take their source ports from a range of its own
(``ip_local_port_range``, set per namespace), and the ranks listen on ports outside every range
(``mpi.mpi_args``), so the end of a connection in a range names it, whichever side opened it.
"""

from __future__ import annotations

import json
import re
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
    if state.spec.flow_gbit is None:
        set_rate(ns, HOST_IF, host.gbit)
    else:
        set_flow_caps(state, host, state.spec.flow_gbit)
    set_rate(sw, host.port, host.gbit)


# Per-flow caps: host i's connections leave from ports FLOW_PORT_BASE + i * FLOW_PORTS_PER_HOST and
# on; listening ports (LISTEN_PORT_MIN and on) are below every range.
FLOW_PORT_BASE = 40000
FLOW_PORTS_PER_HOST = 64
LISTEN_PORT_MIN = 20000
LISTEN_PORTS = 256
LINK_CLASS, OTHER_CLASS, FIRST_FLOW_CLASS = 1, 2, 16
RATE_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}  # tc's rate suffixes (bit/s)


def port_range(state: TestbedState, host: Host) -> tuple[int, int]:
    """The first and last source port of ``host``'s outgoing connections."""
    first = FLOW_PORT_BASE + state.hosts.index(host) * FLOW_PORTS_PER_HOST
    return first, first + FLOW_PORTS_PER_HOST - 1


def _burst(bits: int) -> int:
    return max(MIN_BURST, bits // 8 // 1000)  # at least a millisecond's worth


def set_flow_caps(state: TestbedState, host: Host, flow_gbit: float) -> None:
    """``host`` sends at most its link's rate in all, and at most ``flow_gbit`` on each connection."""
    first, last = port_range(state, host)
    run(
        ["ip", "netns", "exec", host.namespace, "sysctl", "-q", "-w", f"net.ipv4.ip_local_port_range={first} {last}"],
        f"setting {host.name}'s source ports",
    )
    link, flow = round(host.gbit * 1e9), round(flow_gbit * 1e9)
    dev = f"dev {HOST_IF}"
    link_htb = f"htb rate {link}bit burst {_burst(link)} cburst {_burst(link)}"
    lines = [
        f"qdisc replace {dev} root handle 1: htb default {OTHER_CLASS}",
        f"class add {dev} parent 1: classid 1:{LINK_CLASS} {link_htb}",
        f"class add {dev} parent 1:{LINK_CLASS} classid 1:{OTHER_CLASS} {link_htb}",
    ]
    ports = [p for h in state.hosts for p in range(port_range(state, h)[0], port_range(state, h)[1] + 1)]
    for index, port in enumerate(ports):
        classid = f"1:{FIRST_FLOW_CLASS + index:x}"
        lines.append(
            f"class add {dev} parent 1:{LINK_CLASS} classid {classid} htb rate {flow}bit ceil {flow}bit "
            f"burst {_burst(flow)} cburst {_burst(flow)}"
        )
        for field in ("sport", "dport"):
            lines.append(
                f"filter add {dev} parent 1: protocol ip prio 1 u32 match ip {field} {port} 0xffff flowid {classid}"
            )
    run(
        ["tc", "-n", host.namespace, "-batch", "-"],
        f"capping {host.name}'s flows at {flow_gbit} Gbit/s",
        "\n".join(lines) + "\n",
    )


def set_rate(namespace: str, device: str, gbit: float) -> None:
    bits = round(gbit * 1e9)
    burst = _burst(bits)
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


def rate(namespace: str, device: str) -> tuple[str, float] | None:
    """The qdisc shaping ``device`` and its link rate in Gbit/s as the kernel holds them (the root
    tbf, or the htb link class of a host with flow caps), None without either."""
    out = run(["tc", "-j", "-n", namespace, "qdisc", "show", "dev", device], f"reading {device}'s qdisc")
    for qdisc in json.loads(out or "[]"):
        if qdisc.get("kind") == "tbf" and qdisc.get("root"):
            return "tbf", qdisc["options"]["rate"] * 8 / 1e9  # tc reports bytes per second
        if qdisc.get("kind") == "htb" and qdisc.get("root"):
            # `tc -j class show` prints text here (iproute2 6.1): read "rate 2Gbit" off the link class
            line = run(
                ["tc", "-n", namespace, "class", "show", "dev", device, "classid", f"1:{LINK_CLASS}"],
                f"reading {device}'s link class",
            )
            found = re.search(r" rate (\d+(?:\.\d+)?)([KMG]?)bit", line)
            return ("htb", float(found.group(1)) * RATE_UNITS[found.group(2)] / 1e9) if found else None
    return None
