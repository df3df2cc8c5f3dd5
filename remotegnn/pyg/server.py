"""The store server: one RemoteGNN dataset served over TCP to ``RemoteFeatureStore`` /
``RemoteGraphStore`` clients, sampling included (``RemoteNeighborSampler`` asks it for whole
k-hop neighbourhoods, so the structure never leaves the memory machine).

Why TCP and not the pipeline's MPI transport: PyG's ``NodeLoader`` fetches from DataLoader worker
processes, which cannot join an MPI job; every worker instead opens its own TCP connection.

One thread per client connection, one request at a time per connection; the dataset's memory maps,
feature cache and sampler pool are shared by all (``DatasetSource`` is thread-safe, and its numba
kernels release the GIL, so clients are served in parallel). Every request is checked (frame,
request JSON, tensor dtypes, attribute names, row and seed bounds) and a bad one gets an ERROR
frame naming the problem; the connection stays usable. Only a frame that fails to decode closes
its connection, since the stream can no longer be trusted.

With volume limits, feature rows the cache misses are read through one ``FeatureVolume`` shared
by every client: its reads are serialised, so together the clients get the volume's limits, as
they would from the memory machine's one cloud volume.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from remotegnn import compact, wire
from remotegnn.pyg.dataset import DatasetSource
from remotegnn.pyg.errors import message_of, remote_type_of
from remotegnn.pyg.protocol import (
    MAX_REQUEST_BYTES,
    REQUEST,
    EdgesRequest,
    Incoming,
    InfoRequest,
    Outgoing,
    ReadRequest,
    SampleRequest,
    error_tensors,
    json_tensor,
)

if TYPE_CHECKING:
    from remotegnn.volume import FeatureVolume, VolumeLimits

log = logging.getLogger(__name__)
JOIN_S = 5.0


def _tensor(frame: wire.Frame, name: str) -> np.ndarray:
    if name not in frame.tensors:
        raise ValueError(f"the request lacks its {name!r} tensor")
    return frame[name]


class StoreServer:
    """Serves the dataset at ``dataset`` on ``host:port`` (port 0: a free one; ``address`` says
    which) until ``close()``. The feature cache is built before the port opens. With
    ``volume_limits``, cache misses are paced by ``volume`` (whose ``stats`` count them)."""

    def __init__(
        self,
        dataset: str | os.PathLike[str],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        cache_bytes: int = 0,
        policy: str = "degree",
        volume_limits: VolumeLimits | None = None,
    ):
        self.source = DatasetSource(dataset, cache_bytes=cache_bytes, policy=policy)
        self.source.warm()
        self.volume: FeatureVolume | None = None
        if volume_limits is not None:
            from remotegnn.volume import FeatureVolume

            self.volume = FeatureVolume(self.source.dataset, volume_limits)
        self._listener = socket.create_server((host, port), backlog=64)
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._wake_read, self._wake_write = socket.socketpair()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._clients: dict[socket.socket, threading.Thread] = {}

    # -- lifetime -------------------------------------------------------------------------------
    def serve_forever(self, on_ready: Callable[[str, int], None] | None = None) -> None:
        """Accept clients until ``close()``, then disconnect them and return. ``on_ready(host,
        port)`` is called once, before the first client is accepted."""
        try:
            if on_ready is not None:
                on_ready(*self.address)
            with selectors.DefaultSelector() as selector:
                selector.register(self._listener, selectors.EVENT_READ)
                selector.register(self._wake_read, selectors.EVENT_READ)
                while not self._stop.is_set():
                    for key, _ in selector.select():
                        if key.fileobj is self._listener and not self._stop.is_set():
                            self._accept()
        finally:
            self._shutdown()

    def close(self) -> None:
        """Ask ``serve_forever`` to stop; safe from a signal handler and from any thread."""
        self._stop.set()
        try:
            self._wake_write.send(b"\0")
        except OSError:  # already shut down
            pass

    def _accept(self) -> None:
        conn, peer = self._listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        thread = threading.Thread(target=self._serve, args=(conn,), daemon=True, name=f"store client {peer}")
        with self._lock:
            self._clients[conn] = thread
        thread.start()

    def _shutdown(self) -> None:
        self._listener.close()
        with self._lock:
            clients = dict(self._clients)
        for conn in clients:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes the client's thread out of recv
            except OSError:
                pass
        for thread in clients.values():
            thread.join(JOIN_S)
        if self.volume is not None:
            self.volume.close()
        self._wake_read.close()
        self._wake_write.close()

    # -- one client -----------------------------------------------------------------------------
    def _serve(self, conn: socket.socket) -> None:
        incoming, outgoing = Incoming(MAX_REQUEST_BYTES, reuse=True), Outgoing()
        try:
            while not self._stop.is_set():
                try:
                    frame = incoming.receive(conn)
                except wire.FrameError as exc:
                    outgoing.tensors(wire.Kind.ERROR, 0, error_tensors(exc))
                    outgoing.send(conn)
                    return
                if frame is None:
                    return
                try:
                    self._answer(frame, outgoing)
                except Exception as exc:  # every failure becomes an ERROR frame for the client
                    if remote_type_of(exc) == "ServerError":
                        log.exception("request %d failed", frame.seq)
                    outgoing.tensors(wire.Kind.ERROR, frame.seq, error_tensors(exc))
                outgoing.send(conn)
        except OSError as exc:  # the client went away (or close() shut the socket)
            log.debug("client connection ended: %s", message_of(exc))
        finally:
            with self._lock:
                self._clients.pop(conn, None)
            conn.close()

    def _answer(self, frame: wire.Frame, out: Outgoing) -> None:
        """Check one request and write its reply into ``out``."""
        if frame.kind != wire.Kind.REQUEST:
            raise ValueError(f"expected a REQUEST frame, got {frame.kind.name}")
        request = REQUEST.validate_json(bytes(_tensor(frame, "request")))
        source, seq = self.source, frame.seq
        if isinstance(request, InfoRequest):
            out.tensors(wire.Kind.REPLY, seq, {"info": json_tensor(source.info)})
        elif isinstance(request, ReadRequest):
            rows = [_tensor(frame, f"i{k}") for k in request.indices]
            specs = [source.spec(attr) for attr in request.attrs]
            views = out.frame(
                wire.Kind.REPLY,
                seq,
                [
                    wire.TensorSpec(f"r{k}", np.dtype(spec.dtype), (len(rows[k]), *spec.shape[1:]))
                    for k, spec in enumerate(specs)
                ],
            )
            for k, attr in enumerate(request.attrs):
                source.read_into(attr, rows[k], views[f"r{k}"], self.volume)
        elif isinstance(request, SampleRequest):
            seeds = _tensor(frame, "seeds")
            with source.sampled(seeds, request.num_neighbors, request.replace, tuple(request.keys)) as sub:
                parts = compact.encode(
                    sub.n_id,
                    sub.edge_index,
                    sub.e_id,  # PyG's loader slices the store's edge attributes by them
                    None,
                    np.asarray(sub.num_sampled_nodes, dtype=np.int64),
                    np.asarray(sub.num_sampled_edges, dtype=np.int64),
                    num_nodes=source.info.num_nodes,
                    num_edges=source.info.num_edges,
                )
                out.tensors(wire.Kind.REPLY, seq, compact.arrays(parts))
        elif isinstance(request, EdgesRequest):
            row, col = source.edges(request.layout)
            out.tensors(wire.Kind.REPLY, seq, {"row": row, "col": col})


def run_server(
    dataset: Path,
    host: str,
    port: int,
    *,
    cache_bytes: int = 0,
    policy: str = "degree",
    volume_limits: VolumeLimits | None = None,
    on_ready: Callable[[str, int], None] | None = None,
) -> None:
    """Serve ``dataset`` on ``host:port`` until SIGINT or SIGTERM; ``on_ready(host, port)`` is
    called once the port is open (with the real port when ``port`` is 0). Signal handlers are
    installed only when called from the main thread (Python allows nothing else). With
    ``volume_limits``, stderr says how the volume is emulated and, at the end, what it read.

    ``remotegnn serve`` calls this; a test or a notebook may also run it in a subprocess."""
    server = StoreServer(dataset, host, port, cache_bytes=cache_bytes, policy=policy, volume_limits=volume_limits)
    if server.volume is not None and volume_limits is not None:  # the volume exists exactly with limits
        log.info(
            "feature reads that miss the cache are paced to %g MB/s and %g IOPS (%s: %s)",
            volume_limits.mb_per_s,
            volume_limits.iops,
            server.volume.emulation,
            server.volume.emulation_note,
        )
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, lambda *_: server.close())
    try:
        server.serve_forever(on_ready)
    finally:
        server.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if server.volume is not None:
            log.info("feature volume stats %s", json.dumps(server.volume.stats.as_dict()))
