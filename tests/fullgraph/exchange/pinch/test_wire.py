"""fullgraph.exchange.pinch.wire: the datagram format, its checks, and its layout against bpf/pinch.h."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

import fullgraph.exchange.pinch
from fullgraph.exchange.pinch.fixedpoint import MANTISSA_MAX, MAX_CONTRIBUTIONS, MAX_SHIFT, SCALE_BITS
from fullgraph.exchange.pinch.wire import (
    AGGREGATE,
    ARM,
    CHUNK,
    HEADER,
    MAGIC,
    MAX_RECORDS,
    MAX_SENDERS,
    RECORD,
    STATE,
    VERSION,
    Header,
    PacketType,
    WireError,
    body,
    pack_header,
    parse_header,
    raw_per_packet,
    records,
    records_per_packet,
)


def fixed_records(count: int) -> np.ndarray:
    out = np.zeros(count, dtype=RECORD)
    out["index"] = np.arange(count)
    out["flags"] = np.arange(count) % 3
    out["shift"] = np.arange(count) % (MAX_SHIFT + 1)
    # negative int32 mantissas using every byte, and the extremes: a sign or a byte lost shows
    out["value"] = np.arange(count * CHUNK, dtype=np.int32).reshape(count, CHUNK) * -(1 << 20) - 0x010203
    out["value"][:, 0], out["value"][:, -1] = -MANTISSA_MAX, MANTISSA_MAX
    return out


def test_every_packet_type_round_trips():
    recs = fixed_records(5)
    raw = bytes(range(200))
    nacks = np.array([3, 1, 4, 1, 5], dtype="<u4")
    cases = [
        (PacketType.FIXED, {"seq": 2, "packets": 3, "count": 5, "kind": 4}, recs.tobytes()),
        (PacketType.RAW, {"seq": 0, "packets": 7, "count": 200, "flags": 1, "offset": 0, "aux": 1400}, raw),
        (PacketType.READY, {"kind": 6, "aux": 3}, b""),
        (PacketType.DONE, {"kind": 1}, b""),
        (PacketType.NACK, {"count": 5, "kind": 2}, nacks.tobytes()),
        (PacketType.SENT, {"kind": 9}, b""),
    ]
    for kind_type, fields, payload in cases:
        datagram = pack_header(kind_type, 31, 0xFFFF_FFFF, **fields) + payload
        header = parse_header(datagram)
        defaults = dict.fromkeys(("seq", "packets", "count", "kind", "flags", "offset", "aux"), 0)
        assert header == Header(kind_type, 31, 0xFFFF_FFFF, **{**defaults, **fields})
        assert isinstance(header.type, PacketType)
        assert bytes(body(datagram)) == payload
        # memoryviews and bytearrays (what the receive loop hands over) parse the same
        assert parse_header(memoryview(bytearray(datagram))) == header
    fixed = pack_header(PacketType.FIXED, 0, 1, seq=0, packets=1, count=5) + recs.tobytes()
    np.testing.assert_array_equal(records(fixed), recs)


def test_a_full_fixed_packet_parses():
    datagram = pack_header(PacketType.FIXED, 1, 1, packets=1, count=MAX_RECORDS) + fixed_records(MAX_RECORDS).tobytes()
    assert parse_header(datagram).count == MAX_RECORDS
    assert len(records(datagram)) == MAX_RECORDS


def _datagram(**fields) -> bytes:
    """A well-formed FIXED datagram with one record, its header fields overridden."""
    values = {
        "magic": MAGIC,
        "version": VERSION,
        "type": PacketType.FIXED,
        "sender": 1,
        "epoch": 1,
        "seq": 0,
        "packets": 1,
        "count": 1,
        "kind": 0,
        "flags": 0,
        "offset": 0,
        "aux": 0,
    }
    body_bytes = fields.pop("body", None)
    values.update(fields)
    header = struct.pack("<IBBHIIIHBBII", *values.values())
    return header + (fixed_records(1).tobytes() if body_bytes is None else body_bytes)


def test_the_well_formed_base_case_parses():
    assert parse_header(_datagram()).type == PacketType.FIXED


@pytest.mark.parametrize(
    ("datagram", "message"),
    [
        (b"", "0-byte datagram is shorter than the 32-byte header"),
        (_datagram()[:31], "31-byte datagram is shorter"),
        (_datagram(magic=0x12345678), "bad magic 0x12345678"),
        (_datagram(version=VERSION + 1), f"wire version {VERSION + 1}, this side speaks {VERSION}"),
        (_datagram(version=1), f"wire version 1, this side speaks {VERSION}"),  # the int64 records
        (_datagram(type=0), "unknown packet type 0"),
        (_datagram(type=8), "unknown packet type 8"),
        (_datagram()[:-1], "count 1 needs 72 body bytes, has 71"),
        (_datagram() + b"\0", "count 1 needs 72 body bytes, has 73"),
        (_datagram(count=2), "count 2 needs 144 body bytes, has 72"),
        (_datagram(type=PacketType.RAW, count=10, body=b"x" * 9), "RAW packet with count 10 needs 10"),
        (_datagram(type=PacketType.NACK, count=2, body=b"\0" * 4), "NACK packet with count 2 needs 8"),
        (_datagram(type=PacketType.READY, body=b"\0"), "READY packet with count 1 needs 0 body bytes, has 1"),
        (_datagram(type=PacketType.DONE, count=0, body=b"\0" * 8), "DONE packet with count 0 needs 0"),
        (_datagram(count=0, body=b""), "1-64 records, not 0"),
        (_datagram(count=65, body=fixed_records(65).tobytes()), "1-64 records, not 65"),
        (_datagram(sender=MAX_SENDERS), "sender 32 is out of range"),
        (_datagram(sender=0xFFFF), "sender 65535 is out of range"),
        (_datagram(seq=1, packets=1), "packet 1 of a 1-packet message"),
        (_datagram(seq=5, packets=0), "packet 5 of a 0-packet message"),
        (_datagram(type=PacketType.RAW, seq=3, packets=3, count=1, body=b"x"), "packet 3 of a 3-packet message"),
    ],
)
def test_malformed_datagrams_are_refused_naming_the_problem(datagram, message):
    with pytest.raises(WireError, match=re.escape(message)):
        parse_header(datagram)


def test_control_packets_need_no_sequence_number():
    # READY/DONE/SENT/NACK carry seq 0 of 0 packets: only data packets are numbered.
    for kind_type in (PacketType.READY, PacketType.DONE, PacketType.SENT):
        assert parse_header(pack_header(kind_type, 3, 9)).seq == 0


def test_records_per_packet_fits_the_mtu():
    assert records_per_packet(1500) == 20  # (1500 - 28 - 32) // 72
    assert records_per_packet(576) == 7
    assert records_per_packet(9001) == MAX_RECORDS  # 124 would fit: capped at the kernel's loop bound
    assert raw_per_packet(1500) == 1440 and raw_per_packet(1500) % 8 == 0
    assert raw_per_packet(9001) % 8 == 0
    for mtu in (100, 28 + 32 + 71):
        with pytest.raises(WireError, match=f"an MTU of {mtu} bytes holds no 72-byte record"):
            records_per_packet(mtu)
    assert records_per_packet(28 + 32 + 72) == 1


def test_the_dtypes_match_the_c_structs():
    assert [d.itemsize for d in (HEADER, RECORD, AGGREGATE, ARM, STATE)] == [32, 72, 136, 16, 56]
    # struct pinch_header (packed), field by field against the struct format the datagrams use.
    fmt = "<IBBHIIIHBBII"
    offsets = {}
    at = 0
    for name, code in zip(HEADER.names, fmt[1:]):
        offsets[name] = at
        at += struct.calcsize("<" + code)
    assert at == struct.calcsize(fmt) == HEADER.itemsize
    assert {name: HEADER.fields[name][1] for name in HEADER.names} == offsets
    assert HEADER.fields["seq"][1] == 12 and HEADER.fields["flags"][1] == 23 and HEADER.fields["aux"][1] == 28
    # struct pinch_record (packed): the shift at SHIFT_AT = 6, the int32 mantissas at VALUE_AT = 8.
    offsets = {n: RECORD.fields[n][1] for n in RECORD.names}
    assert offsets == {"index": 0, "flags": 4, "shift": 6, "pad": 7, "value": 8}
    assert RECORD.fields["shift"][0] == np.dtype("u1")
    assert RECORD.fields["value"][0].shape == (CHUNK,) and RECORD.fields["value"][0].base == np.dtype("<i4")
    program = (Path(fullgraph.exchange.pinch.__file__).parent / "bpf" / "aggregate.bpf.c").read_text()
    assert re.search(rf"#define SHIFT_AT {offsets['shift']}\b", program)
    assert re.search(rf"#define VALUE_AT {offsets['value']}\b", program)
    # struct pinch_aggregate, pinch_arm, pinch_state (natural alignment).
    assert {n: AGGREGATE.fields[n][1] for n in AGGREGATE.names} == {"sum": 0, "count": 128, "flags": 132}
    assert {n: ARM.fields[n][1] for n in ARM.names} == {"epoch": 0, "base": 4, "limit": 8, "shared": 12}
    state = {n: STATE.fields[n][1] for n in STATE.names}
    assert state == {
        "expected": 0,
        "received": 8,
        "duplicates": 16,
        "passed": 24,
        "packets": 32,
        "errors": 40,
        "port_lo": 48,
        "port_hi": 50,
        "pad": 52,
    }


C_TYPES = {"__u8": "u1", "__u16": "<u2", "__u32": "<u4", "__u64": "<u8", "__s32": "<i4", "__s64": "<i8"}


def c_struct(source: str, name: str) -> list[tuple[str, np.dtype, tuple[int, ...]]]:
    """The members of ``struct name`` in ``source``: (name, dtype, shape), in order."""
    body = re.search(rf"struct {name} {{(.*?)}}", source, re.S)
    assert body is not None, f"struct {name} is not in pinch.h"
    members = []
    for line in re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S).split(";"):
        words = line.split()
        if not words:
            continue
        ctype, declarator = words
        field = re.fullmatch(r"(\w+)(?:\[PINCH_CHUNK\])?", declarator)
        assert field is not None, line
        shape = (CHUNK,) if "[" in declarator else ()
        members.append((field.group(1), np.dtype(C_TYPES[ctype]), shape))
    return members


@pytest.mark.parametrize(
    ("struct_name", "dtype"),
    [
        ("pinch_header", HEADER),
        ("pinch_record", RECORD),
        ("pinch_aggregate", AGGREGATE),
        ("pinch_arm", ARM),
        ("pinch_state", STATE),
    ],
)
def test_the_dtypes_mirror_pinch_h(struct_name, dtype):
    source = (Path(fullgraph.exchange.pinch.__file__).parent / "bpf" / "pinch.h").read_text()
    members = c_struct(source, struct_name)
    assert [m[0] for m in members] == list(dtype.names)
    for member, ctype, shape in members:
        field = dtype.fields[member][0]
        assert (field.base, field.shape) == (ctype, shape), member
    assert re.search(rf"#define PINCH_VERSION {VERSION}\b", source)
    assert re.search(rf"#define PINCH_MAGIC {MAGIC:#x}u", source)
    assert re.search(rf"#define PINCH_CHUNK {CHUNK}\b", source)
    assert re.search(rf"#define PINCH_MAX_RECORDS {MAX_RECORDS}\b", source)
    assert re.search(rf"#define PINCH_SCALE_BITS {SCALE_BITS}\b", source)
    assert re.search(rf"#define PINCH_MAX_SHIFT {MAX_SHIFT}\b", source)
    assert re.search(rf"#define PINCH_MAX_CONTRIBUTIONS {MAX_CONTRIBUTIONS}\b", source)


def test_the_header_dtype_reads_a_packed_header():
    datagram = pack_header(PacketType.RAW, 7, 11, seq=2, packets=3, count=0, kind=5, flags=1, offset=2880, aux=4000)
    h = np.frombuffer(datagram, dtype=HEADER)[0]
    assert (int(h["magic"]), int(h["version"]), int(h["type"]), int(h["sender"])) == (MAGIC, VERSION, 2, 7)
    assert (int(h["epoch"]), int(h["seq"]), int(h["packets"]), int(h["count"])) == (11, 2, 3, 0)
    assert (int(h["kind"]), int(h["flags"]), int(h["offset"]), int(h["aux"])) == (5, 1, 2880, 4000)
    assert datagram[:4] == b"PNCH"  # the magic as it appears on the wire
