"""The batch-shape estimate: a measured shape first, then E[min(fanout, degree)], then the mean degree."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pydantic import ValidationError

from contracts.profile import DatasetProfile, DegreeHistogram, MeasuredBatch, degree_histogram
from contracts.workload import Workload
from planner.costmodel.batch import estimate_batch
from planner.datasets.builtin import builtin_profile

BASE = builtin_profile("products")
WORKLOAD = Workload(fanouts=[10, 5], batch_size=256)


def test_a_matching_measured_shape_is_used_as_is():
    shape = MeasuredBatch(
        fanouts=[10, 5], batch_size=256, nodes_per_hop=[256, 700, 2000], edges_per_hop=[2500, 4000], batches=50
    )
    other = shape.model_copy(update={"batch_size": 512})
    batch = estimate_batch(BASE.model_copy(update={"batch_shapes": [other, shape]}), WORKLOAD)
    assert batch.nodes_per_hop == (256, 700, 2000) and batch.edges_per_hop == (2500, 4000)
    assert batch.batches_per_epoch == -(-BASE.num_train // 256)


def test_without_a_matching_shape_the_degree_histogram_is_used():
    shape = MeasuredBatch(fanouts=[5, 5], batch_size=256, nodes_per_hop=[256, 1, 1], edges_per_hop=[1, 1], batches=1)
    # Every node has degree 2: each seed contributes 2 neighbours, not min(10, mean degree).
    flat = DegreeHistogram(starts=[0, 1, 2], counts=[0, 0, 100], means=[0.0, 1.0, 2.0])
    with_hist = BASE.model_copy(update={"batch_shapes": [shape], "in_degree": flat})
    assert estimate_batch(with_hist, WORKLOAD).edges_per_hop[0] == pytest.approx(256 * 2)
    assert estimate_batch(BASE, WORKLOAD).edges_per_hop[0] == pytest.approx(256 * min(10, BASE.avg_degree))


def test_expected_min_of_fanout_and_degree_on_a_hand_made_distribution():
    # Degrees 0, 1, 1, 3, 8, 100: E[min(5, d)] = (0 + 1 + 1 + 3 + 5 + 5) / 6.
    hist = degree_histogram(np.array([0, 1, 1, 3, 8, 100]))
    assert hist.expected_min(5) == pytest.approx(15 / 6)
    assert hist.expected_min(1) == pytest.approx(5 / 6)
    assert hist.expected_min(-1) == pytest.approx(113 / 6)  # all neighbours: the mean degree


def test_wide_bins_keep_the_mean_and_stay_compact():
    degrees = np.arange(100_000)
    hist = degree_histogram(degrees)
    assert len(hist.starts) < 100 and sum(hist.counts) == len(degrees)
    assert hist.expected_min(-1) == pytest.approx(degrees.mean())
    assert hist.expected_min(10) == pytest.approx(np.minimum(10, degrees).mean())  # exact below 64


def test_profiles_without_the_new_fields_still_load(tmp_path):
    old = BASE.model_dump(mode="json", exclude={"batch_shapes", "in_degree"})
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    loaded = DatasetProfile.model_validate_json(path.read_text())
    assert loaded.batch_shapes == [] and loaded.in_degree is None and loaded.schema_version == 1


def test_inconsistent_shapes_and_histograms_are_refused():
    with pytest.raises(ValidationError, match="nodes_per_hop"):
        MeasuredBatch(fanouts=[10, 5], batch_size=256, nodes_per_hop=[256, 700], edges_per_hop=[1, 2], batches=1)
    with pytest.raises(ValidationError, match="within the bin"):
        DegreeHistogram(starts=[0, 2], counts=[1, 1], means=[3.0, 5.0])
