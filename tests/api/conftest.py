"""Shared fixtures for API tests: an in-process client of the app, the shipped catalog, and for the
page a real `planner serve` process and a real browser."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import warnings
from importlib import resources
from pathlib import Path

import pytest

with warnings.catch_warnings():
    # Starlette 1.x prefers the `httpx2` package for its TestClient and warns when it falls back
    # to `httpx` (which works and which the project depends on anyway).
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from api.app import SNAPSHOT_ENV, app, recommendation_cache
from planner.catalog.snapshot import SHIPPED_SNAPSHOT, load_catalog

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from api_server import free_port, serving  # noqa: E402  (the benchmarks' helper, imported as they import it)


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def client():
    with TestClient(app) as c:  # `with` runs the lifespan (snapshot loaded at start-up)
        yield c


@pytest.fixture
def fresh_cache():
    recommendation_cache.clear()
    yield recommendation_cache
    recommendation_cache.clear()


# ------------------------------------------------------------------ the page in a real browser

SYSTEM_CHROMIUM = Path("/usr/bin/chromium")
STALE_DAYS = 400  # a snapshot this old is flagged stale whatever today's date


def _planner_serve(port: int) -> list[str]:
    return [sys.executable, "-m", "planner.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)]


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (nothing downloaded): skips where either is missing."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        pytest.skip("needs the playwright package (scripts/setup.sh test installs it)")
    if not SYSTEM_CHROMIUM.exists():
        pytest.skip(f"needs Debian's chromium at {SYSTEM_CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(executable_path=str(SYSTEM_CHROMIUM), args=["--no-sandbox"])
        except Error as exc:
            pytest.skip(f"chromium does not start here: {exc.message.splitlines()[0]}")
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def explorer_url():
    """A real `planner serve` process serving the page and the API."""
    port = free_port()
    with serving(_planner_serve(port), port, cwd=REPO) as base:
        yield base


@pytest.fixture(scope="module")
def stale_explorer_url(tmp_path_factory):
    """`planner serve` on a copy of the shipped snapshot retrieved long ago."""
    snapshot = json.loads(resources.files("pricing_data").joinpath(SHIPPED_SNAPSHOT).read_text())
    snapshot["meta"]["retrieved_on"] = (dt.date.today() - dt.timedelta(days=STALE_DAYS)).isoformat()
    path = tmp_path_factory.mktemp("stale") / "old-snapshot.json"
    path.write_text(json.dumps(snapshot))
    port = free_port()
    env = {**os.environ, SNAPSHOT_ENV: str(path)}
    with serving(_planner_serve(port), port, cwd=REPO, env=env) as base:
        yield base
