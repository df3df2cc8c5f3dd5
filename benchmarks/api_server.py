"""Run the API in a child process and know when it answers: ``api_load.py`` loads it, and the API
tests (``tests/api``) query it over real HTTP. Users run the API with ``planner serve``.

Readiness is polled on /healthz with a bounded deadline, never assumed after a sleep.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


class ServerStartError(RuntimeError):
    """The server process exited or did not answer /healthz before the deadline."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def uvicorn_command(port: int, host: str = "127.0.0.1", workers: int = 1) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "api.app:app",
        "--host",
        host,
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--workers",
        str(workers),
    ]


@contextmanager
def serving(
    command: list[str],
    port: int,
    host: str = "127.0.0.1",
    timeout_s: float = 60.0,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Start ``command`` (in ``env``, else this process's environment), wait until /healthz answers,
    yield the base URL, then stop the process."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout
    assert output is not None  # stdout=PIPE always gives a pipe; this tells the type checker
    base = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise ServerStartError(f"server exited with {proc.returncode}:\n{output.read()}")
            try:
                if httpx.get(f"{base}/healthz", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise ServerStartError(f"server not ready after {timeout_s:.0f} s")
            time.sleep(0.1)  # polling interval of a bounded readiness loop, not synchronisation
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        output.close()
