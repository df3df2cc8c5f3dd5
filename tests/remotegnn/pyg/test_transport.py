"""The store server and its clients: pickling and forking (PyG issue #7808), raw protocol abuse
against a real server, timeouts, and a clean shutdown."""

from __future__ import annotations

import multiprocessing as mp
import pickle
import socket
import threading

import numpy as np
import pytest
import torch
from torch_geometric.sampler import NodeSamplerInput

from remotegnn import wire
from remotegnn.pyg import RemoteFeatureStore, RemoteGraphStore, RemoteNeighborSampler, StoreConnectionError
from remotegnn.pyg.protocol import LENGTH, MAX_MESSAGE_BYTES, MAX_REPLY_BYTES, Incoming, Outgoing, error_tensors
from remotegnn.pyg.server import StoreServer
from remotegnn.pyg.server_process import ServerProcess


def test_stores_and_sampler_pickle_without_connections(small, small_server):
    fs = RemoteFeatureStore.connect(small_server.address)
    gs = RemoteGraphStore.connect(small_server.address)
    fs[None, "x", 0]
    assert fs._sources[None].connection._sock is not None
    copy = pickle.loads(pickle.dumps(fs))
    assert copy._sources[None].connection._sock is None  # reopened on first use, never pickled
    assert torch.equal(copy[None, "x", torch.tensor([3])], fs[None, "x", torch.tensor([3])])
    sampler = pickle.loads(pickle.dumps(RemoteNeighborSampler(gs, [1, 2, 4], batch_size=2)))
    local = pickle.loads(pickle.dumps(RemoteFeatureStore.local(small.path, cache_bytes=64)))
    assert torch.equal(local[None, "y", None], torch.arange(14) % 3)
    out = sampler.sample_from_nodes(NodeSamplerInput(torch.tensor([0, 1]), torch.tensor([0, 1])))
    assert out.num_sampled_nodes == [2, 2, 3, 4]


def _child_port(fs: RemoteFeatureStore, out) -> None:
    fs[None, "x", 1]
    out.send(fs._sources[None].connection._sock.getsockname()[1])


def test_a_forked_process_dials_its_own_connection(small_server):
    fs = RemoteFeatureStore.connect(small_server.address)
    fs[None, "x", 0]
    parent_port = fs._sources[None].connection._sock.getsockname()[1]
    receive, send = mp.get_context("fork").Pipe(duplex=False)
    child = mp.get_context("fork").Process(target=_child_port, args=(fs, send))
    child.start()
    child_port = receive.recv()
    child.join(30)
    assert child.exitcode == 0 and child_port != parent_port
    assert fs._sources[None].connection._sock.getsockname()[1] == parent_port  # the parent kept its own
    assert fs[None, "y", 4] == 1


def _request(sock, out: Outgoing, seq: int, tensors: dict) -> wire.Frame:
    out.tensors(wire.Kind.REQUEST, seq, tensors)
    out.send(sock)
    return Incoming(MAX_REPLY_BYTES, reuse=False).receive(sock)


def _json(text: str) -> np.ndarray:
    return wire.text_tensor(text)


@pytest.mark.parametrize(
    "tensors, kind, words",
    [
        ({"request": _json('{"op": "drop tables"}')}, "ValueError", ["op"]),
        ({"request": _json("not json")}, "ValueError", ["JSON"]),
        ({"seeds": np.zeros(1, np.int64)}, "ValueError", ["'request'"]),
        (
            {"request": _json('{"op": "read", "attrs": ["x"], "indices": [0]}'), "i0": np.zeros(2, np.int32)},
            "ValueError",
            ["int64"],
        ),
        (
            {"request": _json('{"op": "read", "attrs": ["secret"], "indices": [0]}'), "i0": np.zeros(2, np.int64)},
            "KeyError",
            ["'secret'", "x, y"],
        ),
        (
            {"request": _json('{"op": "read", "attrs": ["x"], "indices": [0]}'), "i0": np.array([0, 99])},
            "IndexError",
            ["'x'", "99"],
        ),
        ({"request": _json('{"op": "read", "attrs": ["x"], "indices": [0]}')}, "ValueError", ["'i0'"]),
        (
            {"request": _json('{"op": "sample", "num_neighbors": [2], "keys": [1]}'), "seeds": np.array([-1])},
            "IndexError",
            ["seed nodes", "-1"],
        ),
        (
            {"request": _json('{"op": "sample", "num_neighbors": [0], "keys": []}'), "seeds": np.array([1])},
            "ValueError",
            ["fanout"],
        ),
    ],
)
def test_bad_requests_get_error_frames_and_the_connection_survives(small_server, tensors, kind, words):
    with socket.create_connection((small_server.host, small_server.port), timeout=30) as sock:
        out = Outgoing()
        reply = _request(sock, out, 7, tensors)
        assert reply.kind == wire.Kind.ERROR and reply.seq == 7 and reply.text("type") == kind
        assert all(word in reply.text() for word in words), reply.text()
        ok = _request(sock, out, 8, {"request": _json('{"op": "info"}')})
        assert ok.kind == wire.Kind.REPLY and ok.seq == 8 and b'"num_nodes":14' in bytes(ok["info"])


@pytest.mark.parametrize("payload", [b"\x00" * 64, LENGTH.pack(1 << 40)])
def test_a_corrupt_or_oversized_frame_is_answered_then_the_connection_closed(small_server, payload):
    with socket.create_connection((small_server.host, small_server.port), timeout=30) as sock:
        sock.sendall(payload if payload.startswith(LENGTH.pack(1 << 40)) else LENGTH.pack(len(payload)) + payload)
        incoming = Incoming(MAX_REPLY_BYTES, reuse=False)
        reply = incoming.receive(sock)
        assert reply.kind == wire.Kind.ERROR and ("magic" in reply.text() or "limit" in reply.text())
        assert incoming.receive(sock) is None  # closed by the server


def test_a_silent_server_times_out_naming_its_address():
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel accepts; nobody ever answers
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(StoreConnectionError, match=f"{address} did not answer a 'info' request within 0.2 s"):
            RemoteFeatureStore.connect(address, timeout_s=0.2)


def test_sigterm_stops_the_server_cleanly_and_clients_are_told(small):
    server = ServerProcess(small.path)
    fs = RemoteFeatureStore.connect(server.address)
    assert fs[None, "y", 2] == 2
    assert server.stop() == 0
    with pytest.raises(StoreConnectionError, match=server.address):
        fs[None, "y", 2]


def test_close_from_another_thread_ends_serve_forever(small):
    server = StoreServer(small.path)
    ready = threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(lambda *_: ready.set(),))
    thread.start()
    assert ready.wait(30)
    fs = RemoteFeatureStore.connect(f"{server.address[0]}:{server.address[1]}")
    assert fs.get_tensor_size(None, "x") == (14, 4)
    server.close()
    thread.join(30)
    assert not thread.is_alive()


def test_an_error_reply_cuts_a_long_message_by_bytes():
    """30 kB of CJK: cut to MAX_MESSAGE_BYTES of UTF-8 at a character boundary, and marked."""
    message = "读取失败" * 2500
    text = bytes(error_tensors(ValueError(message))["text"])
    assert len(text) <= MAX_MESSAGE_BYTES
    decoded = text.decode("utf-8")  # strict: no character split
    assert decoded.endswith(wire.TRUNCATION_MARK) and message.startswith(decoded.removesuffix(wire.TRUNCATION_MARK))
