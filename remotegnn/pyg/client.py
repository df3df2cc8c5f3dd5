"""The client side of the store protocol: a lazily opened connection, and ``ServerSource``, which
answers the stores' questions from a store server just as ``DatasetSource`` does from a local
dataset.

PyG issue #7808 is the trap this avoids: a connection opened in the training process and copied
into DataLoader workers (by fork, or by pickling) would make several processes read and write one
socket, interleaving their requests. A ``Connection`` therefore pickles as its address only, and
opens its socket on first use in each process: a forked worker sees a different pid and drops the
inherited socket object (closing only its own copy of the descriptor; the parent's connection stays
open) before dialling its own.
"""

from __future__ import annotations

import os
import socket
import threading
from functools import cached_property

import numpy as np

from foundation.parsing import parse_host_port
from remotegnn import compact, wire
from remotegnn.pyg.errors import StoreConnectionError
from remotegnn.pyg.protocol import (
    MAX_REPLY_BYTES,
    DatasetInfo,
    EdgesRequest,
    Incoming,
    InfoRequest,
    Outgoing,
    ReadRequest,
    Request,
    SampleRequest,
    json_tensor,
    raise_remote,
)
from remotegnn.sampling import SampledSubgraph

ATTRS_PER_REQUEST = 32  # ReadRequest's limit; frames hold at most 64 tensors


class Connection:
    """One request at a time to a store server over TCP, with a timeout on every wait."""

    def __init__(self, address: str, *, timeout_s: float = 60.0):
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s}")
        self.host, self.port = parse_host_port(address)
        self.address, self.timeout_s = address, float(timeout_s)
        self._start_process()

    def _start_process(self) -> None:
        """Fresh per-process state: no socket yet, a new lock (one held by another thread at fork
        time would stay held in the child forever)."""
        self._pid = os.getpid()
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._seq = 0
        self._outgoing = Outgoing()
        self._incoming = Incoming(MAX_REPLY_BYTES, reuse=False)

    def __getstate__(self) -> dict:
        return {"address": self.address, "timeout_s": self.timeout_s}

    def __setstate__(self, state: dict) -> None:
        Connection.__init__(self, state["address"], timeout_s=state["timeout_s"])

    def _socket(self) -> socket.socket:
        if self._sock is None:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
            except TimeoutError as exc:
                raise StoreConnectionError(
                    f"store server {self.address} did not accept a connection within {self.timeout_s:g} s"
                ) from exc
            except OSError as exc:
                raise StoreConnectionError(
                    f"cannot connect to store server {self.address}: "
                    f"{exc.strerror or exc}; is `remotegnn serve` running there?"
                ) from exc
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
        return self._sock

    def close(self) -> None:
        if self._sock is not None and self._pid == os.getpid():
            self._sock.close()
        self._sock = None

    def call(self, request: Request, tensors: dict[str, np.ndarray] | None = None) -> wire.Frame:
        """Send one request and return its reply's frame (views of a buffer of its own)."""
        if self._pid != os.getpid():
            self._start_process()
        with self._lock:
            self._seq += 1
            try:
                sock = self._socket()
                self._outgoing.tensors(
                    wire.Kind.REQUEST, self._seq, {"request": json_tensor(request), **(tensors or {})}
                )
                self._outgoing.send(sock)
                reply = self._incoming.receive(sock)
            except TimeoutError as exc:
                self.close()
                raise StoreConnectionError(
                    f"store server {self.address} did not answer a {request.op!r} request within {self.timeout_s:g} s"
                ) from exc
            except (OSError, wire.FrameError) as exc:
                self.close()
                raise StoreConnectionError(f"lost the connection to store server {self.address}: {exc}") from exc
            if reply is None:
                self.close()
                raise StoreConnectionError(f"store server {self.address} closed the connection")
            if reply.seq != self._seq:
                self.close()  # the stream is out of step: start over on a new connection
                if reply.kind != wire.Kind.ERROR:
                    raise StoreConnectionError(
                        f"store server {self.address} answered request {reply.seq} to request {self._seq}"
                    )
        if reply.kind == wire.Kind.ERROR:
            raise_remote(reply)
        if reply.kind != wire.Kind.REPLY:
            raise StoreConnectionError(f"store server {self.address} sent a {reply.kind.name} frame, not a reply")
        return reply


class ServerSource:
    """A dataset served by a store server: the ``DatasetSource`` interface, one round trip per call."""

    def __init__(self, address: str, *, timeout_s: float = 60.0):
        self.connection = Connection(address, timeout_s=timeout_s)

    @property
    def address(self) -> str:
        return self.connection.address

    def __repr__(self) -> str:
        return f"ServerSource({self.address!r})"

    @cached_property
    def info(self) -> DatasetInfo:
        return DatasetInfo.model_validate_json(bytes(self.connection.call(InfoRequest())["info"]))

    def read_many(self, items: list[tuple[str, np.ndarray]]) -> list[np.ndarray]:
        """Rows of several attributes in one request; items that pass the same rows array share it."""
        out: list[np.ndarray] = []
        for start in range(0, len(items), ATTRS_PER_REQUEST):
            chunk = items[start : start + ATTRS_PER_REQUEST]
            numbers: dict[int, int] = {}
            tensors: dict[str, np.ndarray] = {}
            for _, rows in chunk:
                if id(rows) not in numbers:
                    numbers[id(rows)] = len(numbers)
                    tensors[f"i{numbers[id(rows)]}"] = rows
            request = ReadRequest(attrs=[attr for attr, _ in chunk], indices=[numbers[id(rows)] for _, rows in chunk])
            reply = self.connection.call(request, tensors)
            out.extend(reply[f"r{k}"] for k in range(len(chunk)))
        return out

    def sample(
        self, seeds: np.ndarray, num_neighbors: list[int], replace: bool, keys: tuple[int, ...]
    ) -> SampledSubgraph:
        reply = compact.expand(
            self.connection.call(
                SampleRequest(num_neighbors=list(num_neighbors), replace=replace, keys=list(keys)), {"seeds": seeds}
            )
        )
        return SampledSubgraph(
            reply["n_id"],
            reply["edge_index"],
            reply["e_id"],
            reply["num_sampled_nodes"].tolist(),
            reply["num_sampled_edges"].tolist(),
        )

    def edges(self, layout: str) -> tuple[np.ndarray, np.ndarray]:
        reply = self.connection.call(EdgesRequest(layout=layout))
        return reply["row"], reply["col"]
