"""One way to run moto in server mode for the tests that talk to AWS (catalog refresh, provisioning)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def running_moto() -> Iterator[str]:
    """A ThreadedMotoServer on 127.0.0.1 and a free port; yields its URL, stops it on exit."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()  # returns once the socket is bound
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
