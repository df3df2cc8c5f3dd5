"""The store protocol: requests and replies as ``remotegnn.wire`` frames over a byte stream.

A message on the stream is an 8-byte little-endian length and one wire frame (typed header, CRC-32
over header and payload, raw tensor buffers). Nothing is ever unpickled: the server validates the
frame, then the request's JSON with pydantic, then every tensor's dtype, shape and bounds, and
answers anything wrong with an ERROR frame instead of acting on it.

- Requests are REQUEST frames: a ``request`` tensor holding the request as UTF-8 JSON (one of the
  models below), plus raw int64 tensors: the row indices ``i0``, ``i1``, ... of a read, or the
  ``seeds`` of a sample.
- Replies are REPLY frames of raw tensors (rows ``r0``, ``r1``, ...; a sampled subgraph; an edge
  index; the dataset's ``info`` JSON), or ERROR frames with the message in ``text`` and the
  exception type in ``type`` (see ``errors.REMOTE_TYPES``).
- Every reply carries the request's sequence number, so a client that lost track of the stream
  notices instead of reading another request's answer.

The length prefix lets a reader size its buffer before reading the frame; requests are capped
(``MAX_REQUEST_BYTES``) so a bad client cannot make the server allocate without bound.
"""

from __future__ import annotations

import socket
import struct
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, Field, TypeAdapter, model_validator

from foundation.models import StrictModel
from remotegnn import wire
from remotegnn.pyg.errors import REMOTE_TYPES, StoreServerError, message_of, remote_type_of

LENGTH = struct.Struct("<Q")
MAX_REQUEST_BYTES = 1 << 30
MAX_REPLY_BYTES = 1 << 40
MAX_MESSAGE_BYTES = 8000
"""An ERROR reply's message is cut to this many UTF-8 bytes (``wire.truncate_utf8``): the reply
buffer grows to fit any message, so the cap only keeps a runaway one (a huge repr) off the wire."""


class AttrInfo(StrictModel):
    dtype: str
    shape: tuple[int, ...]


class DatasetInfo(StrictModel):
    """What a dataset offers through the store: node attributes by name, and its structure's size."""

    name: str
    num_nodes: int = Field(ge=0)
    num_edges: int = Field(ge=0)
    attrs: dict[str, AttrInfo]


class InfoRequest(StrictModel):
    op: Literal["info"] = "info"


class ReadRequest(StrictModel):
    """Rows of several attributes in one round trip; ``indices[k]`` names the row tensor
    (``i{indices[k]}``) attribute ``attrs[k]`` is read with, so attributes can share one."""

    op: Literal["read"] = "read"
    attrs: list[str] = Field(min_length=1, max_length=32)
    indices: list[int]

    @model_validator(mode="after")
    def _one_index_each(self) -> ReadRequest:
        if len(self.indices) != len(self.attrs) or any(not 0 <= i < len(self.attrs) for i in self.indices):
            raise ValueError("indices: one row-tensor number per attribute, each below the attribute count")
        return self


class SampleRequest(StrictModel):
    op: Literal["sample"] = "sample"
    num_neighbors: list[int] = Field(min_length=1, max_length=16)
    replace: bool = False
    keys: list[Annotated[int, Field(ge=0, lt=1 << 64)]] = Field(max_length=8)


class EdgesRequest(StrictModel):
    op: Literal["edges"] = "edges"
    layout: Literal["coo", "csr", "csc"]


Request = Annotated[InfoRequest | ReadRequest | SampleRequest | EdgesRequest, Field(discriminator="op")]
REQUEST = TypeAdapter(Request)


def json_tensor(model: BaseModel) -> np.ndarray:
    return wire.text_tensor(model.model_dump_json())


def check_rows(rows: np.ndarray, num_rows: int, what: str) -> None:
    """Refuse row ids outside [0, num_rows) with an IndexError naming ``what``."""
    if rows.ndim != 1 or rows.dtype != np.int64:
        raise ValueError(f"{what}: row ids must be a 1-D int64 tensor, not {rows.dtype}{list(rows.shape)}")
    if len(rows) and (rows.min() < 0 or rows.max() >= num_rows):
        bad = rows[(rows < 0) | (rows >= num_rows)]
        raise IndexError(
            f"{what}: index {int(bad[0])} is out of range for {num_rows:,} rows ({len(bad):,} such indices)"
        )


def error_tensors(exc: BaseException) -> dict[str, np.ndarray]:
    """An ERROR frame's tensors for an exception raised while answering."""
    return {
        "text": wire.text_tensor(wire.truncate_utf8(message_of(exc), MAX_MESSAGE_BYTES)),
        "type": wire.text_tensor(remote_type_of(exc)),
    }


def raise_remote(frame: wire.Frame) -> None:
    """Raise what an ERROR frame describes, as the exception type it names."""
    raise REMOTE_TYPES.get(frame.text("type"), StoreServerError)(frame.text())


class Outgoing:
    """A reusable send buffer: each frame is written in place behind its length prefix (allocating
    per message costs more than the copy on these machines)."""

    def __init__(self) -> None:
        self._buf = np.empty(1 << 16, dtype=np.uint8)
        self._pending: wire.PendingFrame | None = None

    def frame(self, kind: wire.Kind, seq: int, specs: list[wire.TensorSpec]) -> dict[str, np.ndarray]:
        """Start a frame; returns views of its tensors to fill before ``send``."""
        needed = LENGTH.size + wire.frame_size(specs)
        if len(self._buf) < needed:
            self._buf = np.empty(max(needed, 2 * len(self._buf)), dtype=np.uint8)
        self._pending = wire.write_frame(self._buf[LENGTH.size :], kind, 0, 0, seq, specs)
        return self._pending.views

    def tensors(self, kind: wire.Kind, seq: int, tensors: dict[str, np.ndarray]) -> None:
        """Start a frame holding copies of ``tensors``."""
        views = self.frame(kind, seq, [wire.spec_of(name, np.asarray(value)) for name, value in tensors.items()])
        for name, value in tensors.items():
            views[name][...] = value

    def send(self, sock: socket.socket) -> None:
        pending, self._pending = self._pending, None
        assert pending is not None, "send without a frame"
        nbytes = pending.seal()
        LENGTH.pack_into(self._buf.data, 0, nbytes)
        sock.sendall(self._buf.data[: LENGTH.size + nbytes])


class Incoming:
    """Reads one message at a time. With ``reuse`` the buffer is kept for the next message (the
    server: frames are consumed before the next read); without, every message gets its own buffer,
    so the views a reply hands out stay valid (the client returns them as tensors)."""

    def __init__(self, limit: int, *, reuse: bool):
        self.limit, self.reuse = limit, reuse
        self._buf = np.empty(1 << 16 if reuse else 0, dtype=np.uint8)
        self._length = bytearray(LENGTH.size)

    def receive(self, sock: socket.socket) -> wire.Frame | None:
        """The next frame, or None when the peer closed the stream between messages."""
        if not _fill(sock, memoryview(self._length), at_boundary=True):
            return None
        (nbytes,) = LENGTH.unpack(self._length)
        if nbytes > self.limit:
            raise wire.FrameError(f"a {nbytes:,}-byte message exceeds the {self.limit:,}-byte limit")
        if not self.reuse:
            buf = np.empty(nbytes, dtype=np.uint8)
        else:
            if len(self._buf) < nbytes:
                self._buf = np.empty(max(nbytes, 2 * len(self._buf)), dtype=np.uint8)
            buf = self._buf[:nbytes]
        _fill(sock, buf.data, at_boundary=False)
        return wire.decode(buf)


def _fill(sock: socket.socket, view: memoryview, *, at_boundary: bool) -> bool:
    """Read exactly len(view) bytes; False if the stream ended before the first byte of a message."""
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            if at_boundary and got == 0:
                return False
            raise ConnectionError(f"the peer closed the connection {got} bytes into a {len(view)}-byte read")
        got += n
    return True
