"""The wire format: round trips, zero-copy decoding, and rejection of every kind of damage."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from remotegnn import wire
from remotegnn.wire import FrameError, Kind, TensorSpec


def sample_tensors():
    rng = np.random.default_rng(0)
    return {
        "n_id": np.arange(7, dtype=np.int64),
        "edge_index": rng.integers(0, 7, (2, 9)),
        "x": rng.standard_normal((7, 5)).astype(np.float32),
        "h": np.ones((7, 3), np.float16),
        "empty": np.empty((0, 4), np.float32),
        "mask": np.array([True, False, True]),
    }


def encoded(header_checksum_only=False):
    tensors = sample_tensors()
    buf = np.zeros(wire.frame_size(wire.spec_of(k, v) for k, v in tensors.items()), np.uint8)
    n = wire.encode(buf, Kind.BATCH, 3, 11, 42, tensors, header_checksum_only=header_checksum_only)
    assert n == len(buf)
    return buf, tensors


def test_round_trip_keeps_header_dtypes_and_values():
    buf, tensors = encoded()
    frame = wire.decode(buf)
    assert (frame.kind, frame.epoch, frame.batch, frame.seq, frame.nbytes) == (Kind.BATCH, 3, 11, 42, len(buf))
    assert list(frame.tensors) == list(tensors)
    for name, value in tensors.items():
        assert frame[name].dtype == value.dtype and frame[name].shape == value.shape
        np.testing.assert_array_equal(frame[name], value)


def test_decode_is_zero_copy_and_aligned():
    buf, _ = encoded()
    frame = wire.decode(buf)
    assert np.shares_memory(frame["x"], buf)
    assert all(v.ctypes.data % wire.ALIGN == buf.ctypes.data % wire.ALIGN for v in frame.tensors.values())


def test_write_frame_views_fill_in_place_and_buffer_is_reused():
    buf = np.zeros(1 << 16, np.uint8)
    for batch in range(3):
        pending = wire.write_frame(buf, Kind.BATCH, 0, batch, batch, [TensorSpec("x", np.dtype(np.float32), (4, 2))])
        pending.views["x"][:] = batch
        pending.seal()
        frame = wire.decode(buf)
        assert frame.batch == batch and (frame["x"] == batch).all()


def test_text_frames():
    buf = np.zeros(1024, np.uint8)
    wire.encode(buf, Kind.ERROR, 0, 0, 0, {"text": wire.text_tensor("sampler died: ü")})
    assert wire.decode(buf).text() == "sampler died: ü"


@pytest.mark.parametrize(
    "offset, value, message",
    [
        (0, b"XXXX", "bad magic"),
        (4, struct.pack("<H", 9), "unknown frame version 9"),
        (60, b"\xff", "checksum mismatch"),
    ],
)
def test_damaged_header_is_named(offset, value, message):
    buf, _ = encoded()
    buf[offset : offset + len(value)] = np.frombuffer(value, np.uint8)
    with pytest.raises(FrameError, match=message):
        wire.decode(buf)


def rewrite_entry(buf, index, **changes):
    """Edit a table entry and re-stamp a valid checksum, so the later checks are reached."""
    at = wire._HEADER.size + index * wire._ENTRY.size
    name, code, ndim, *rest = wire._ENTRY.unpack_from(buf, at)
    fields = dict(name=name, code=code, ndim=ndim, shape=rest[:4], offset=rest[4], nbytes=rest[5]) | changes
    wire._ENTRY.pack_into(
        buf, at, fields["name"], fields["code"], fields["ndim"], *fields["shape"], fields["offset"], fields["nbytes"]
    )
    count, payload = struct.unpack_from("<I", buf, 36)[0], struct.unpack_from("<Q", buf, 44)[0]
    header = wire._round_up(wire._HEADER.size + wire._ENTRY.size * count)
    struct.pack_into("<I", buf, wire._CHECKSUM_AT, wire._checksum(buf, header, payload, 0))


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(code=99), "unknown dtype code 99"),
        (dict(offset=1 << 20), "past the payload's end"),
        (dict(nbytes=3), "do not match"),
        (dict(ndim=9), "bad shape"),
        (dict(name=b"n_id"), "appears twice"),
    ],
)
def test_bad_table_entries_are_named(changes, message):
    buf, _ = encoded()
    rewrite_entry(buf, 2, **changes)
    with pytest.raises(FrameError, match=message):
        wire.decode(buf)


def test_truncated_frames():
    buf, _ = encoded()
    with pytest.raises(FrameError, match="truncated"):
        wire.decode(buf[:20])
    with pytest.raises(FrameError, match="truncated"):
        wire.decode(buf[:-64])


def test_encoder_refuses_what_it_cannot_frame():
    small = np.zeros(64, np.uint8)
    with pytest.raises(FrameError, match="buffer holds 64"):
        wire.encode(small, Kind.BATCH, 0, 0, 0, {"x": np.zeros(100, np.float32)})
    with pytest.raises(FrameError, match="cannot be framed"):
        wire.encode(np.zeros(4096, np.uint8), Kind.BATCH, 0, 0, 0, {"c": np.zeros(2, np.complex64)})


def test_every_single_byte_corruption_is_rejected():
    """Flip one random bit anywhere (header, table, padding, payload): decode must refuse."""
    buf, _ = encoded()
    rng = np.random.default_rng(1)
    for position in rng.choice(len(buf), 300, replace=False):
        damaged = buf.copy()
        damaged[position] ^= np.uint8(1 << int(rng.integers(8)))
        with pytest.raises(FrameError):
            wire.decode(damaged)


def test_random_garbage_never_decodes_or_crashes():
    rng = np.random.default_rng(2)
    for size in rng.integers(0, 4096, 200):
        with pytest.raises(FrameError):
            wire.decode(rng.integers(0, 256, size, dtype=np.uint8))


def test_header_only_checksum_skips_payload_but_guards_header():
    buf, tensors = encoded(header_checksum_only=True)
    frame = wire.decode(buf)
    np.testing.assert_array_equal(frame["x"], tensors["x"])
    buf[-1] ^= 1  # payload: not covered by design
    wire.decode(buf)
    buf[13] ^= 1  # epoch field: covered
    with pytest.raises(FrameError, match="checksum"):
        wire.decode(buf)


@pytest.mark.parametrize("text", ["é" * 30_000, "采样失败" * 5_000, "🙂" * 8_000, "a" * 20_000 + "é" * 10])
@pytest.mark.parametrize("limit", [100, 101, 102, 4096])
def test_truncate_utf8_keeps_the_byte_bound_and_whole_characters(text, limit):
    cut = wire.truncate_utf8(text, limit)
    data = cut.encode("utf-8")  # strict: a split character would raise here
    assert len(data) <= limit
    assert len(data) >= limit - 3  # only the character the cut would split (at most 3 of its 4 bytes) is dropped
    assert cut.endswith(wire.TRUNCATION_MARK) and text.startswith(cut.removesuffix(wire.TRUNCATION_MARK))


def test_truncate_utf8_leaves_text_that_fits_unchanged():
    for text in ["", "short", "é" * 50]:
        assert wire.truncate_utf8(text, 100) == text
    assert wire.truncate_utf8("é" * 50, 100) == "é" * 50  # exactly the limit
    assert wire.truncate_utf8("bad name \udcff", 100) == "bad name \\udcff"  # a lone surrogate cannot be sent


def test_a_text_cut_to_its_budget_fits_a_buffer_of_text_frame_size():
    buf = np.empty(wire.text_frame_size(1000), np.uint8)
    text = wire.truncate_utf8("采样失败" * 1000, 1000)
    wire.encode(buf, Kind.ERROR, 0, 0, 0, {"text": wire.text_tensor(text)})
    assert wire.decode(buf).text() == text
    with pytest.raises(ValueError, match="truncation mark"):
        wire.truncate_utf8("é" * 100, 3)
