"""Shared fixtures for planner tests: the shipped catalog and small helpers to build clusters."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.snapshot import load_catalog
from planner.costmodel.evaluation import Clusters


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def index(catalog):
    """Instance name -> row index in the catalog's column arrays."""
    return {inst.name: i for i, inst in enumerate(catalog.columns.instances)}


def make_clusters(index, rows):
    """Clusters from (learner, memory or None, k, MB/s, IOPS) tuples."""
    return Clusters(
        learner=np.array([index[r[0]] for r in rows]),
        memory=np.array([index[r[1]] if r[1] else -1 for r in rows]),
        count=np.array([r[2] for r in rows]),
        volume_mbps=np.array([float(r[3]) for r in rows]),
        volume_iops=np.array([float(r[4]) for r in rows]),
    )
