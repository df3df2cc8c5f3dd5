"""Shared fixtures for API tests: an in-process client of the app and the shipped catalog."""

from __future__ import annotations

import warnings

import pytest

with warnings.catch_warnings():
    # Starlette 1.x prefers the `httpx2` package for its TestClient and warns when it falls back
    # to `httpx` (which works and which the project depends on anyway).
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from api.app import app, recommendation_cache
from planner.catalog.snapshot import load_catalog


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
