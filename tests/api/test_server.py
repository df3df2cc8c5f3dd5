"""The API served for real: a uvicorn process on 127.0.0.1 and a free port, queried over HTTP."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from contracts.plan import Recommendation

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from api_server import free_port, serving, uvicorn_command  # noqa: E402  (the benchmarks' helper)


def test_uvicorn_serves_the_api_over_http():
    port = free_port()
    with serving(uvicorn_command(port), port, cwd=REPO) as base, httpx.Client(base_url=base, timeout=60.0) as client:
        health = client.get("/healthz").json()
        assert health["status"] == "ok" and health["snapshot"]["age_days"] >= 0

        body = {
            "dataset": "papers100M",
            "constraints": {"budget_usd": 50},
            "filters": {"gpu_families": ["g4dn", "g5"], "memory_families": ["r8g"]},
        }
        first = client.post("/v1/recommendations", json=body)
        assert first.status_code == 200, first.text
        rec = Recommendation.model_validate_json(first.content)
        assert rec.feasible and rec.snapshot.sha256 == health["snapshot"]["sha256"]
        assert client.post("/v1/recommendations", json=body).content == first.content

        missing = client.get("/v1/datasets/paper100M")
        assert missing.status_code == 404 and missing.json()["suggestions"] == ["papers100M"]
        huge = client.post(
            "/v1/recommendations", content=b"{" + b" " * 2**20 + b"}", headers={"content-type": "application/json"}
        )
        assert huge.status_code == 413


def test_planner_serve_runs_the_app():
    port = free_port()
    command = [sys.executable, "-m", "planner.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with serving(command, port, cwd=REPO) as base:
        response = httpx.get(f"{base}/v1/instances/g4dn.xlarge", timeout=30.0)
        assert response.status_code == 200 and response.json()["gpu_model"] == "T4"
