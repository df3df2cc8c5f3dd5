"""Where each rank of an ``mpiexec`` job listens for UDP, told to every other rank.

Each rank reads its interface's IPv4 and MAC addresses by ioctl in its own network namespace
(sysfs may show another namespace's devices) and shares them as a padded JSON card through a
fixed-size byte Allgather: nothing is unpickled.
"""

from __future__ import annotations

import fcntl
import socket
import struct
from typing import Final

import numpy as np

from foundation.models import StrictModel
from fullgraph.exchange.endpoint import CommError

ADDRESS_BYTES: Final = 256  # one rank's JSON address card, padded, for a fixed-size Allgather
SIOCGIFADDR: Final = 0x8915
SIOCGIFHWADDR: Final = 0x8927
IFNAME_BYTES: Final = 15  # IFNAMSIZ less its terminating zero


class AddressCard(StrictModel):
    """One rank's UDP address and the interface it is on."""

    host: str
    port: int
    interface: str
    mac: str


def _interface_ioctl(interface: str, request: int) -> bytes:
    """One SIOCGIF* answer for ``interface`` in this process's network namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            return fcntl.ioctl(s.fileno(), request, struct.pack("256s", interface.encode()[:IFNAME_BYTES]))
        except OSError as exc:
            raise CommError(f"interface {interface}: {exc.strerror}; name one with an IPv4 address") from None


def interface_address(interface: str) -> str:
    return socket.inet_ntoa(_interface_ioctl(interface, SIOCGIFADDR)[20:24])


def interface_mac(interface: str) -> str:
    return _interface_ioctl(interface, SIOCGIFHWADDR)[18:24].hex(":")


def default_interface() -> str:
    """The first interface other than loopback that has an IPv4 address (else ``lo``)."""
    for _, name in socket.if_nameindex():
        if name == "lo":
            continue
        try:
            interface_address(name)
            return name
        except CommError:
            continue
    return "lo"


def card(port: int, interface: str | None) -> AddressCard:
    """This rank's card: ``port`` on ``interface`` (default: :func:`default_interface`)."""
    interface = interface or default_interface()
    return AddressCard(host=interface_address(interface), port=port, interface=interface, mac=interface_mac(interface))


def allgather_cards(comm, mine: AddressCard) -> list[AddressCard]:
    """Every rank's card, in rank order."""
    padded = np.zeros(ADDRESS_BYTES, dtype=np.uint8)
    raw = mine.model_dump_json().encode()
    padded[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    everyone = np.zeros((comm.Get_size(), ADDRESS_BYTES), dtype=np.uint8)
    comm.Allgather(padded, everyone)
    return [AddressCard.model_validate_json(row.tobytes().rstrip(b"\0")) for row in everyone]
