"""What the namespace tests run inside a namespace (``ip netns exec NS python agent.py CMD ...``).

Programs attach in the namespace of the process that attaches them, so each side of a test is
its own process. Every command prints JSON lines; ``ready`` means the socket is bound and any
program attached, so the test may send.

- ``receive PORT [--faults DIRECTION DROP DUP]``: datagrams that arrived on PORT;
- ``send IP PORT N [--faults ...] [--fixed R]``: N datagrams (payload = their number, or FIXED
  packets of R records: packet i, record j adds i + j + 1 to index j);
- ``aggregate PORT RECORDS``: a KernelAggregator on eth0 armed for sender 0, epoch 1 and RECORDS
  records; what reached the socket and the sums;
- ``broadcast IP PORT PAYLOAD MARK PEERS``: one datagram from a UDP and one from a raw socket
  with a Broadcaster on eth0 (PEERS: JSON list of [ip, port, mac hex]);
- ``hold xdp|broadcast|faults|all``: attach (``all``: a KernelAggregator, a Broadcaster and an
  ingress FaultInjector), say ``ready`` with the attached programs' ids, wait for a line on
  stdin, close. The SIGKILL test kills it instead of writing that line.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np
from packets import fixed, records, udp_header

from fullgraph.exchange.pinch import libbpf, wire
from fullgraph.exchange.pinch.kernel import Broadcaster, FaultInjector, KernelAggregator

INTERFACE = "eth0"
FIRST_WAIT = 5.0  # seconds for the first datagram
LINGER = 0.5  # seconds of silence after which no more datagrams are coming
ALL_PORTS = (1, 0xFFFF)
HOLD_MARK = 0x70696E63
MAX_DATAGRAM = 1 << 16
AGGREGATES = 64


def say(**fields) -> None:
    print(json.dumps(fields), flush=True)


def linger(sock: socket.socket) -> list[bytes]:
    """Datagrams until none came for LINGER seconds (FIRST_WAIT for the first)."""
    got = []
    sock.settimeout(FIRST_WAIT)
    while True:
        try:
            got.append(sock.recv(MAX_DATAGRAM))
        except TimeoutError:
            return got
        sock.settimeout(LINGER)


def faults(stack: ExitStack, spec: list[str] | None, ports: tuple[int, int]) -> FaultInjector | None:
    if not spec:
        return None
    direction, drop, dup = spec
    return stack.enter_context(FaultInjector(INTERFACE, direction, int(drop), int(dup), ports))


def receive(args) -> None:
    with ExitStack() as stack:
        injector = faults(stack, args.faults, (args.port, args.port + 1))
        sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        sock.bind(("0.0.0.0", args.port))
        say(ready=True)
        say(got=[datagram.hex() for datagram in linger(sock)], counters=injector.counters() if injector else None)


def send(args) -> None:
    with ExitStack() as stack:
        injector = faults(stack, args.faults, (args.port, args.port + 1))
        sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        for i in range(args.n):
            sock.sendto(payload(i, args.fixed), (args.ip, args.port))
        say(sent=args.n, counters=injector.counters() if injector else None)


def payload(i: int, fixed_records: int | None) -> bytes:
    if fixed_records is None:
        return str(i).encode()
    index = np.arange(fixed_records)
    return fixed(0, 1, i, records(index, np.repeat(i + index + 1, wire.CHUNK).reshape(-1, wire.CHUNK)))


def aggregate(args) -> None:
    with ExitStack() as stack:
        agg = stack.enter_context(KernelAggregator(INTERFACE, AGGREGATES, (args.port, args.port + 1)))
        agg.arms[0] = (1, 0, AGGREGATES, 0)  # one sender: its range is its own
        agg.state["expected"] = args.records
        sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        sock.bind(("0.0.0.0", args.port))
        say(ready=True)
        got = linger(sock)
        state = {name: int(agg.state[0][name]) for name in wire.STATE.names}
        say(
            got=len(got),
            sums=agg.aggregates["sum"][:, 0].tolist(),
            counts=agg.aggregates["count"].tolist(),
            state=state,
        )


def broadcast(args) -> None:
    here = socket.if_nametoindex(INTERFACE)
    peers = [(here, peer_ip, port, bytes.fromhex(mac)) for peer_ip, port, mac in json.loads(args.peers)]
    payload = bytes.fromhex(args.payload)
    with Broadcaster(INTERFACE, peers, args.mark) as caster:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(payload, (args.ip, args.port))
        # A raw socket sends a fully checksummed datagram (no offload), so the receivers' UDP
        # stack verifies the checksum the program rewrote.
        with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP) as raw:
            raw.bind((args.source, 0))
            raw.sendto(udp_header(payload, args.port, args.source, args.ip) + payload, (args.ip, 0))
        say(counters=caster.counters())


def hold(args) -> None:
    here = socket.if_nametoindex(INTERFACE)
    makers: dict[str, list[Callable[[], KernelAggregator | Broadcaster | FaultInjector]]] = {
        "xdp": [lambda: KernelAggregator(INTERFACE, 1, ALL_PORTS)],
        "broadcast": [lambda: Broadcaster(INTERFACE, [(here, "10.231.0.9", 1, b"\xff" * 6)], HOLD_MARK)],
        "faults": [lambda: FaultInjector(INTERFACE, "egress")],
    }
    makers["all"] = makers["xdp"] + makers["broadcast"] + [lambda: FaultInjector(INTERFACE, "ingress")]
    with ExitStack() as stack:
        held = [stack.enter_context(make()) for make in makers[args.kind]]
        say(ready=True, programs=[libbpf.program_info(h.prog_fd, "a held program").id for h in held])
        sys.stdin.readline()
    say(closed=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(required=True)
    p = commands.add_parser("receive")
    p.add_argument("port", type=int)
    p.add_argument("--faults", nargs=3)
    p.set_defaults(run=receive)
    p = commands.add_parser("send")
    p.add_argument("ip")
    p.add_argument("port", type=int)
    p.add_argument("n", type=int)
    p.add_argument("--faults", nargs=3)
    p.add_argument("--fixed", type=int)
    p.set_defaults(run=send)
    p = commands.add_parser("aggregate")
    p.add_argument("port", type=int)
    p.add_argument("records", type=int)
    p.set_defaults(run=aggregate)
    p = commands.add_parser("broadcast")
    p.add_argument("source")
    p.add_argument("ip")
    p.add_argument("port", type=int)
    p.add_argument("payload")
    p.add_argument("mark", type=int)
    p.add_argument("peers")
    p.set_defaults(run=broadcast)
    p = commands.add_parser("hold")
    p.add_argument("kind", choices=["xdp", "broadcast", "faults", "all"])
    p.set_defaults(run=hold)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
