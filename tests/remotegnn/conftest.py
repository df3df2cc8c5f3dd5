"""Shared fixtures: small datasets written through the real format on real disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from remotegnn.store import KEEP_AS_GIVEN, DatasetWriter, EdgePolicy, GraphDataset

# PyG's golden case for NeighborLoader (test/loader/test_neighbor_loader.py).
GOLDEN_EDGES = np.array([[2, 3, 4, 5, 7, 7, 10, 11, 12, 13], [0, 1, 2, 3, 2, 3, 7, 7, 7, 7]])


def write_dataset(
    path: Path, src, dst, num_nodes: int, *, dim: int = 4, policy: EdgePolicy = KEEP_AS_GIVEN, labels=None, train=None
) -> GraphDataset:
    """A dataset whose feature row v is v, v+0.25, v+0.5, ... (so gathers are easy to check)."""
    with DatasetWriter(path, name=path.name) as writer:
        writer.write_graph(np.asarray(src), np.asarray(dst), num_nodes, policy)
        features = writer.features(dim)
        features[:] = np.arange(num_nodes)[:, None] + 0.25 * np.arange(dim)[None, :]
        del features
        if labels is not None:
            writer.write_labels(np.asarray(labels))
        if train is not None:
            writer.write_split("train", np.asarray(train))
        writer.commit(source="test")
    return GraphDataset.open(path)


@pytest.fixture
def golden(tmp_path) -> GraphDataset:
    return write_dataset(tmp_path / "golden", GOLDEN_EDGES[0], GOLDEN_EDGES[1], 14)


@pytest.fixture(scope="session")
def rmat_reordered(rmat, tmp_path_factory) -> GraphDataset:
    """``rmat`` stored breadth-first (``remotegnn reorder``); the user's ids are unchanged."""
    from remotegnn.store.reorder import reorder

    return GraphDataset.open(reorder(rmat, tmp_path_factory.mktemp("bfs") / "rmat12-bfs", "bfs", progress=False).path)
