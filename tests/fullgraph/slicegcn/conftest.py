"""A small labelled graph for the SliceGCN tests, written through the real format."""

from __future__ import annotations

import pytest

from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth


@pytest.fixture(scope="session")
def graph(tmp_path_factory) -> GraphDataset:
    """A 500-node R-MAT graph with 10 feature columns (p = 3 leaves an overlapping last slice)."""
    path = tmp_path_factory.mktemp("slicegcn") / "small"
    spec = SynthSpec(nodes=500, edges=2_500, dim=10, classes=3, seed=4, train=0.4, val=0.2, test=0.4, signal=1.0)
    synth(spec, path, progress=False)
    return GraphDataset.open(path)


@pytest.fixture(scope="session")
def binary(tmp_path_factory) -> GraphDataset:
    """Two classes, so runs are scored by ROC-AUC as Tolokers is."""
    path = tmp_path_factory.mktemp("slicegcn") / "binary"
    synth(SynthSpec(nodes=400, edges=2_000, dim=8, classes=2, seed=6, signal=1.0), path, progress=False)
    return GraphDataset.open(path)
