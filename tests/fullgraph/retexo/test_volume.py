"""fullgraph.retexo.volume: Eq. 2's terms counted on a partition and the real modules."""

from __future__ import annotations

from fullgraph.partitioner import open_partition
from fullgraph.retexo.volume import volume_inputs


def test_model_and_classifier_bytes_are_counted_on_the_real_modules(partitions):
    meta = open_partition(partitions["random3"])  # 12 features, 3 classes
    sage = volume_inputs(meta, "sage", hidden=8, layers=2, heads=1, rounds=5)
    # SAGEConv(i, o): lin_l (i*o + o) and lin_r (i*o); classifier Linear(8, 3)
    assert sage.model_bytes == 4 * ((12 * 8 * 2 + 8) + (8 * 3 * 2 + 3))
    assert sage.classifier_bytes == [4 * (8 * 3 + 3)]
    assert sage.hidden_bytes == [4 * 8] and sage.feature_bytes == 4 * 12
    assert sage.boundary_rows == meta.boundary_rows and sage.workers == 3
    gcn = volume_inputs(meta, "gcn", hidden=8, layers=3, heads=1, rounds=5)
    assert gcn.hidden_bytes == [32, 32] and len(gcn.classifier_bytes) == 2
