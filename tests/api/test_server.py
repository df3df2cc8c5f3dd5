"""The API served for real: a uvicorn process on 127.0.0.1 and a free port, queried over HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

from planner.plan import Recommendation

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(command: list[str], port: int):
    """Start ``command``, wait until /healthz answers (bounded), yield the base URL, then stop it."""
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited with {proc.returncode}:\n{proc.stdout.read()}")
            try:
                if httpx.get(f"{base}/healthz", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"server not ready after {STARTUP_TIMEOUT_S:.0f} s")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_uvicorn_serves_the_api_over_http():
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "api.app:app", "--host", "127.0.0.1", "--port", str(port)]
    with serving(command, port) as base, httpx.Client(base_url=base, timeout=60.0) as client:
        health = client.get("/healthz").json()
        assert health["status"] == "ok" and health["snapshot"]["age_days"] >= 0

        body = {"dataset": "papers100M", "constraints": {"budget_usd": 50},
                "filters": {"gpu_families": ["g4dn", "g5"], "memory_families": ["r8g"]}}
        first = client.post("/v1/recommendations", json=body)
        assert first.status_code == 200, first.text
        rec = Recommendation.model_validate_json(first.content)
        assert rec.feasible and rec.snapshot.sha256 == health["snapshot"]["sha256"]
        assert client.post("/v1/recommendations", json=body).content == first.content

        missing = client.get("/v1/datasets/paper100M")
        assert missing.status_code == 404 and missing.json()["suggestions"] == ["papers100M"]
        huge = client.post("/v1/recommendations", content=b"{" + b" " * 2**20 + b"}",
                           headers={"content-type": "application/json"})
        assert huge.status_code == 413


def test_planner_serve_runs_the_app():
    port = free_port()
    command = [sys.executable, "-m", "planner.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with serving(command, port) as base:
        response = httpx.get(f"{base}/v1/instances/g4dn.xlarge", timeout=30.0)
        assert response.status_code == 200 and response.json()["gpu_model"] == "T4"
