"""Run a store server in a child process and wait until it listens (tests, benchmarks, notebooks).

Readiness is the server's own announcement on stdout, the line ``remotegnn serve`` prints, read with
a deadline; nothing here guesses with sleeps. ``stop()`` sends SIGTERM, which the server answers
by closing its clients and exiting 0.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

from remotegnn.pyg.errors import StoreServerError

READY = re.compile(r"remotegnn store server listening on (\S+):(\d+)")


class ServerProcess:
    """``with ServerProcess(dataset) as server: RemoteFeatureStore.connect(server.address)``."""

    def __init__(
        self,
        dataset: str | os.PathLike[str],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        cache_bytes: int = 0,
        policy: str = "degree",
        volume_mbps: float | None = None,
        volume_iops: float | None = None,
        ready_timeout_s: float = 120.0,
    ):
        volume = {"--volume-mbps": volume_mbps, "--volume-iops": volume_iops}
        self._stderr = tempfile.TemporaryFile()
        self.stderr = ""  # what the server wrote to stderr, kept by stop()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "remotegnn.cli.main",
                "serve",
                os.fspath(dataset),
                "--listen",
                f"{host}:{port}",
                "--cache-gb",
                repr(cache_bytes / 1e9),
                "--policy",
                policy,
                *(part for flag, value in volume.items() if value is not None for part in (flag, repr(value))),
            ],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        try:
            self.host, self.port = self._wait_ready(ready_timeout_s)
        except BaseException:
            self.stop()
            raise

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _wait_ready(self, timeout_s: float) -> tuple[str, int]:
        stdout = self.process.stdout
        assert stdout is not None  # started with stdout=PIPE
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([stdout], [], [], left)
            if not readable:
                break
            line = stdout.readline()
            if not line:  # the child exited before announcing itself
                self.process.wait()
                raise StoreServerError(
                    f"the store server exited with code {self.process.returncode} before "
                    f"listening: {self._stderr_tail()}"
                )
            if match := READY.search(line):
                return match.group(1), int(match.group(2))
        raise StoreServerError(
            f"the store server did not report listening within {timeout_s:g} s: {self._stderr_tail()}"
        )

    def _stderr_tail(self, chars: int = 2000) -> str:
        return self._stderr_text()[-chars:].strip() or "(no output)"

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", errors="replace")

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, wait for the exit, keep its stderr in ``stderr``, and return its code (killed
        after ``timeout_s``: -9)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self._stderr.closed:
            self.stderr = self._stderr_text()
        assert self.process.stdout is not None  # started with stdout=PIPE
        self.process.stdout.close()
        self._stderr.close()
        return self.process.returncode

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
