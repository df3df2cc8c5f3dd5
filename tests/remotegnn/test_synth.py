"""`synth`: reproducible, power-law, and with features a classifier can learn from."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from pydantic import ValidationError

from remotegnn.cache.hitrate import degree_skew
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

SPEC = SynthSpec(nodes=3000, edges=30_000, dim=16, classes=5, seed=3)


def test_same_seed_same_bytes(tmp_path, rmat):
    a, _ = synth(SPEC, tmp_path / "a", progress=False)
    b, _ = synth(SPEC, tmp_path / "b", progress=False)
    c, _ = synth(SPEC.model_copy(update={"seed": 4}), tmp_path / "c", progress=False)

    def digests(meta):
        return {k: f.blake2b for k, f in meta.files.items()}

    assert digests(a) == digests(b)
    assert digests(a)["features"] != digests(c)["features"]


def test_structure_is_power_law_and_undirected(rmat):
    ds = rmat
    edges = ds.edge_index()
    forward = set(map(tuple, edges.T.tolist()))
    assert all((d, s) in forward for s, d in forward)  # both directions stored
    assert not (edges[0] == edges[1]).any()  # self loops dropped
    assert len(forward) == ds.meta.num_edges  # no duplicates
    skew = degree_skew(ds, (0.01, 0.10))
    assert skew[0.01] > 0.05 and skew[0.10] > 0.3  # far above a uniform graph's 1% and 10%


def test_features_carry_the_class_signal(tmp_path):
    meta, _ = synth(SPEC, tmp_path / "s", progress=False)
    ds = GraphDataset.open(tmp_path / "s")
    x, y = np.asarray(ds.features), np.asarray(ds.labels)
    train, test = np.asarray(ds.split("train")), np.asarray(ds.split("test"))
    centroids = np.stack([x[train][y[train] == c].mean(0) for c in range(meta.num_classes)])
    predicted = np.argmin(((x[test][:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)
    accuracy = (predicted == y[test]).mean()
    assert accuracy > 2 / meta.num_classes  # chance is 1/5
    assert sorted(np.unique(y).tolist()) == list(range(5))


def test_splits_are_disjoint_and_sized(rmat):
    train, val, test = (set(np.asarray(rmat.split(s)).tolist()) for s in ("train", "val", "test"))
    assert not (train & val or train & test or val & test)
    assert (len(train), len(val), len(test)) == (410, 205, 410)


def test_bad_parameters_are_refused():
    with pytest.raises(ValidationError, match="a \\+ b \\+ c"):
        SynthSpec(nodes=10, edges=10, dim=2, classes=2, a=0.6, b=0.3, c=0.2)
    with pytest.raises(ValidationError, match="fractions"):
        SynthSpec(nodes=10, edges=10, dim=2, classes=2, train=0.9, test=0.5)


def test_a_full_disk_ends_synth_with_one_line_and_leaves_nothing(small_disk):
    disk = small_disk("64k")
    argv = [sys.executable, "-m", "remotegnn.cli.main", "synth", str(disk / "g"), "--nodes", "3000"]
    done = subprocess.run(argv + ["--edges", "30000", "--dim", "16"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "small-disk is full (No space left on device); nothing was written to" in line
    assert list(disk.iterdir()) == []
