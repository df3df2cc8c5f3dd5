"""Real store servers (child processes running ``run_server``) over real datasets, and a small
heterogeneous graph made of two RemoteGNN datasets."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn.pyg.server_process import ServerProcess
from remotegnn.store import GraphDataset
from tests.remotegnn.conftest import GOLDEN_EDGES, write_dataset


@pytest.fixture(scope="session")
def small(tmp_path_factory) -> GraphDataset:
    """PyG's golden graph (14 nodes, 10 edges), feature row v = v + 0.25 * column, label v % 3."""
    path = tmp_path_factory.mktemp("small") / "golden"
    return write_dataset(path, GOLDEN_EDGES[0], GOLDEN_EDGES[1], 14, labels=np.arange(14) % 3)


@pytest.fixture(scope="session")
def authors(tmp_path_factory) -> GraphDataset:
    """A second node type: 6 authors who know each other in a ring, 3-dim features, labels 0/1."""
    path = tmp_path_factory.mktemp("authors") / "authors"
    ring = np.arange(6)
    return write_dataset(path, ring, (ring + 1) % 6, 6, dim=3, labels=ring % 2)


def _serve(dataset: GraphDataset, **options):
    server = ServerProcess(dataset.path, **options)
    yield server
    assert server.stop() == 0, "the store server should exit cleanly on SIGTERM"


@pytest.fixture(scope="session")
def small_server(small: GraphDataset):
    yield from _serve(small)


@pytest.fixture(scope="session")
def rmat_server(rmat: GraphDataset):
    """The R-MAT graph with a 64 KiB degree cache (a quarter of its feature rows)."""
    yield from _serve(rmat, cache_bytes=64 << 10)
