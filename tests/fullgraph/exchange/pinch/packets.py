"""Ethernet + IPv4 + UDP + PINCH frames for BPF_PROG_TEST_RUN and raw sockets (a test helper)."""

from __future__ import annotations

import socket
import struct

import numpy as np

from fullgraph.exchange.pinch import wire

SRC_MAC = bytes.fromhex("020000000001")
DST_MAC = bytes.fromhex("020000000002")
SRC_IP = "10.231.0.1"
DST_IP = "10.231.0.2"
SOURCE_PORT = 40999
ETH_P_IP = 0x0800
ETH_P_ARP = 0x0806
IP_TTL = 64
IPV4_NO_OPTIONS = 0x45  # version 4, 5 words of header
UDP = struct.Struct("!HHHH")
IP = struct.Struct("!BBHHHBBH4s4s")


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_header(payload: bytes, dport: int, src_ip: str = SRC_IP, dst_ip: str = DST_IP) -> bytes:
    """A UDP header with its checksum over the IPv4 pseudo-header."""
    length = UDP.size + len(payload)
    pseudo = socket.inet_aton(src_ip) + socket.inet_aton(dst_ip) + struct.pack("!BBH", 0, socket.IPPROTO_UDP, length)
    check = checksum(pseudo + UDP.pack(SOURCE_PORT, dport, length, 0) + payload) or 0xFFFF
    return UDP.pack(SOURCE_PORT, dport, length, check)


def frame(payload: bytes, dport: int, *, src_ip: str = SRC_IP, dst_ip: str = DST_IP) -> bytes:
    """An Ethernet frame carrying ``payload`` in one UDP datagram, checksums right."""
    udp = udp_header(payload, dport, src_ip, dst_ip) + payload
    fields = [IPV4_NO_OPTIONS, 0, IP.size + len(udp), 0, 0, IP_TTL, socket.IPPROTO_UDP, 0]
    ip = IP.pack(*fields, socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = IP.pack(*fields[:-1], checksum(ip), socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    return DST_MAC + SRC_MAC + struct.pack("!H", ETH_P_IP) + ip + udp


def records(indices, values, flags=0, shift=0) -> np.ndarray:
    """FIXED records at ``indices``: ``values`` (n, CHUNK) int32 mantissas, value j of record i
    adding ``values[i, j] << shift[i]`` (``shift`` a scalar or one per record; not checked against
    MAX_SHIFT, so a test can send an out-of-range one). Values that do not fit an int32 are refused,
    not wrapped."""
    values = np.asarray(values)
    if values.size and (values.min() < np.iinfo(np.int32).min or values.max() > np.iinfo(np.int32).max):
        raise ValueError("a record's values are int32 mantissas: build them with a shift")
    out = np.zeros(len(indices), dtype=wire.RECORD)
    out["index"], out["value"], out["flags"], out["shift"] = indices, values, flags, shift
    return out


def header(kind_type: wire.PacketType, sender: int, epoch: int, **fields) -> bytes:
    """A PINCH header laid out by wire.HEADER; ``fields`` sets any other field by name."""
    head = np.zeros((), dtype=wire.HEADER)
    head["magic"], head["version"], head["type"] = wire.MAGIC, wire.VERSION, int(kind_type)
    head["sender"], head["epoch"] = sender, epoch
    for name, value in fields.items():
        head[name] = value
    return head.tobytes()


def fixed(sender: int, epoch: int, seq: int, recs: np.ndarray, *, count: int | None = None, flags: int = 0) -> bytes:
    """A FIXED datagram (header + records); ``count`` overrides the header's record count."""
    count = len(recs) if count is None else count
    return header(wire.PacketType.FIXED, sender, epoch, seq=seq, count=count, flags=flags) + recs.tobytes()


def fixed_frame(sender: int, epoch: int, seq: int, recs: np.ndarray, dport: int, **kwargs) -> bytes:
    return frame(fixed(sender, epoch, seq, recs, **kwargs), dport)
