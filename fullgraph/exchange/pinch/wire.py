"""The PINCH wire format: one UDP datagram = a 32-byte header and a body (records, raw bytes or a list).

Mirrors ``bpf/pinch.h``, which the kernel programs compile against; the two change together,
with :data:`VERSION`. Little-endian on the wire (x86-64 and arm64 at both ends and in BPF).

- ``FIXED``: records of (index u32, flags u16, shift u8, pad u8, int32[CHUNK]) whose values
  ``mantissa << shift`` the receiver sums per index into int64 - in its XDP program when one is
  attached, else in user space (:mod:`fullgraph.exchange.pinch.aggregate`; :mod:`fullgraph.exchange.pinch.fixedpoint`).
- ``RAW``: a slice of a byte message at ``offset``, delivered to user space as it is (bit-exact).
- ``READY`` / ``DONE`` / ``NACK``: the receiver's word to a sender about one epoch.

Nothing received is trusted: :func:`parse_header` checks magic, version, type and sizes and
raises :class:`WireError`; bodies are read as numpy views of the datagram, never unpickled.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Final, NamedTuple

import numpy as np

from foundation.errors import MemoryBridgeError

MAGIC: Final = 0x48434E50  # "PNCH" as a little-endian u32
VERSION: Final = 2
CHUNK: Final = 16  # values per record
MAX_RECORDS: Final = 64  # per packet, the kernel program's loop bound
MAX_SENDERS: Final = 32
WINDOW: Final = 32768  # packets per sender per epoch
MAX_PEERS: Final = 32
IP_UDP_HEADERS: Final = 28  # IPv4 (20) + UDP (8) inside the MTU
F_BROADCAST: Final = 1

R_SATURATED: Final = 1
R_OVERFLOW: Final = 2


class PacketType(IntEnum):
    FIXED = 1
    RAW = 2
    READY = 3
    DONE = 4
    NACK = 5
    SENT = 6  # sender -> receiver: the whole epoch has been transmitted (the next sender may go)
    ALIVE = 7  # a rank -> every peer, every peer_timeout_s / 4: this process is running (computing or waiting)


HEADER = np.dtype(
    [
        ("magic", "<u4"),
        ("version", "u1"),
        ("type", "u1"),
        ("sender", "<u2"),
        ("epoch", "<u4"),
        ("seq", "<u4"),
        ("packets", "<u4"),
        ("count", "<u2"),
        ("kind", "u1"),
        ("flags", "u1"),
        ("offset", "<u4"),
        ("aux", "<u4"),
    ]
)
RECORD = np.dtype([("index", "<u4"), ("flags", "<u2"), ("shift", "u1"), ("pad", "u1"), ("value", "<i4", (CHUNK,))])
# The aggregate array's entry, as the kernel lays it out (and as the user-space fallback keeps it).
AGGREGATE = np.dtype([("sum", "<i8", (CHUNK,)), ("count", "<u4"), ("flags", "<u4")])
# Per sender: the armed epoch and where its records land (``aggregates[base + index]``, index < limit - base).
ARM = np.dtype([("epoch", "<u4"), ("base", "<u4"), ("limit", "<u4"), ("shared", "<u4")])
# The receiver's counters (one entry); ``expected`` and the ports are written by user space.
STATE = np.dtype(
    [
        ("expected", "<u8"),
        ("received", "<u8"),
        ("duplicates", "<u8"),
        ("passed", "<u8"),
        ("packets", "<u8"),
        ("errors", "<u8"),
        ("port_lo", "<u2"),
        ("port_hi", "<u2"),
        ("pad", "<u4"),
    ]
)
assert HEADER.itemsize == 32 and RECORD.itemsize == 72 and AGGREGATE.itemsize == 136
assert ARM.itemsize == 16 and STATE.itemsize == 56


class WireError(MemoryBridgeError):
    """A datagram that is not a well-formed PINCH packet."""


def records_per_packet(mtu: int) -> int:
    """FIXED records that fit one datagram on a link of ``mtu`` bytes."""
    fit = (mtu - IP_UDP_HEADERS - HEADER.itemsize) // RECORD.itemsize
    if fit < 1:
        raise WireError(f"an MTU of {mtu} bytes holds no {RECORD.itemsize}-byte record; use 1500 or more")
    return min(fit, MAX_RECORDS)


def raw_per_packet(mtu: int) -> int:
    """RAW payload bytes per datagram (a multiple of 8, so float64 messages split on values)."""
    return (mtu - IP_UDP_HEADERS - HEADER.itemsize) // 8 * 8


class Header(NamedTuple):
    type: PacketType
    sender: int
    epoch: int
    seq: int
    packets: int
    count: int  # type: ignore[assignment]  # the header field bpf/pinch.h names so; tuple.count is never used
    kind: int
    flags: int
    offset: int
    aux: int


_HEADER = struct.Struct("<IBBHIIIHBBII")  # HEADER's layout, for the per-datagram path
assert _HEADER.size == HEADER.itemsize


def pack_header(
    kind_type: PacketType,
    sender: int,
    epoch: int,
    *,
    seq: int = 0,
    packets: int = 0,
    count: int = 0,
    kind: int = 0,
    flags: int = 0,
    offset: int = 0,
    aux: int = 0,
) -> bytes:
    return _HEADER.pack(MAGIC, VERSION, kind_type, sender, epoch, seq, packets, count, kind, flags, offset, aux)


def parse_header(datagram: bytes | bytearray | memoryview) -> Header:
    """The header of ``datagram``, checked against its length; WireError names what is wrong."""
    if len(datagram) < HEADER.itemsize:
        raise WireError(f"a {len(datagram)}-byte datagram is shorter than the {HEADER.itemsize}-byte header")
    magic, version, type_, sender, epoch, seq, packets, count, kind, flags, offset, aux = _HEADER.unpack_from(datagram)
    if magic != MAGIC:
        raise WireError(f"bad magic {magic:#x}: not a PINCH packet")
    if version != VERSION:
        raise WireError(f"wire version {version}, this side speaks {VERSION}: upgrade both ends together")
    try:
        kind_type = PacketType(type_)
    except ValueError:
        raise WireError(f"unknown packet type {type_}") from None
    body = len(datagram) - HEADER.itemsize
    need = {PacketType.FIXED: count * RECORD.itemsize, PacketType.RAW: count, PacketType.NACK: count * 4}.get(
        kind_type, 0
    )
    if body != need:
        raise WireError(f"a {kind_type.name} packet with count {count} needs {need} body bytes, has {body}")
    if kind_type == PacketType.FIXED and not 0 < count <= MAX_RECORDS:
        raise WireError(f"a FIXED packet carries 1-{MAX_RECORDS} records, not {count}")
    if sender >= MAX_SENDERS:
        raise WireError(f"sender {sender} is out of range (at most {MAX_SENDERS} ranks)")
    if kind_type in (PacketType.FIXED, PacketType.RAW) and not seq < packets:
        raise WireError(f"packet {seq} of a {packets}-packet message")
    return Header(kind_type, sender, epoch, seq, packets, count, kind, flags, offset, aux)


def records(datagram: bytes | bytearray | memoryview) -> np.ndarray:
    """The FIXED records of a checked datagram, as a view."""
    return np.frombuffer(datagram, dtype=RECORD, offset=HEADER.itemsize)


def body(datagram: bytes | bytearray | memoryview) -> memoryview:
    return memoryview(datagram)[HEADER.itemsize :]
