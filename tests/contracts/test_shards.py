"""Every row has exactly one memory machine, whichever layout deals them, and a machine's rows
are the runs its manifest lists."""

from __future__ import annotations

import numpy as np
import pytest

from contracts.shards import MIN_STRIPES_PER_SHARD, STRIPE_BYTES, ShardLayout, ShardManifest


@pytest.mark.parametrize("layout", ["striped", "range", "modulo"])
@pytest.mark.parametrize(("count", "num_nodes"), [(1, 10), (3, 10), (4, 100_003), (5, 4)])
def test_every_row_has_exactly_one_machine_and_its_runs_say_which(layout, count, num_nodes):
    shards = ShardLayout.of(layout, count, num_nodes, row_bytes=64)
    owner = shards.owner(np.arange(num_nodes))
    covered = np.full(num_nodes, -1)
    for index in range(count):
        for start, stop in shards.ranges(index):
            assert (covered[start:stop] == -1).all()  # no row in two runs
            covered[start:stop] = index
        assert shards.rows(index) == int((owner == index).sum())
    assert np.array_equal(covered, owner)


def test_striped_blocks_are_a_stripe_of_the_file_on_large_graphs_and_smaller_on_small_ones():
    big = ShardLayout.of("striped", 4, 100_000_000, row_bytes=512)
    assert big.block_rows == STRIPE_BYTES // 512
    small = ShardLayout.of("striped", 4, 10_000, row_bytes=512)
    assert small.block_rows < STRIPE_BYTES // 512
    # about MIN_STRIPES_PER_SHARD runs each (blocks round up), so hot rows still spread over every machine
    assert all(len(small.ranges(i)) >= MIN_STRIPES_PER_SHARD - 4 for i in range(4))


def test_range_is_one_run_each_and_modulo_one_row_per_run():
    assert [len(ShardLayout.of("range", 3, 10, 8).ranges(i)) for i in range(3)] == [1, 1, 1]
    assert ShardLayout.of("modulo", 3, 10, 8).ranges(1).tolist() == [[1, 2], [4, 5], [7, 8]]
    assert ShardLayout.of("striped", 1, 10, 8).block_rows == 1  # one machine holds everything


def test_the_manifest_adds_up_to_the_feature_file():
    shards = ShardLayout.of("striped", 3, 1_000_001, row_bytes=96)
    manifest = ShardManifest.of(shards, row_bytes=96, structure_bytes=123)
    assert sum(s.feature_bytes for s in manifest.shards) == 1_000_001 * 96
    assert [s.runs for s in manifest.shards] == [len(shards.ranges(i)) for i in range(3)]
    assert ShardManifest.model_validate_json(manifest.model_dump_json()) == manifest


def test_an_unknown_layout_or_field_is_refused():
    with pytest.raises(ValueError, match="layout"):
        ShardLayout.model_validate({"layout": "hashed", "count": 2, "num_nodes": 4, "block_rows": 1})
    with pytest.raises(ValueError, match="extra"):
        ShardLayout.model_validate({"count": 2, "num_nodes": 4, "block_rows": 1, "blocks": 3})
