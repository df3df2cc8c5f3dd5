"""The compact encoding's widths and the per-batch frame overhead the planner prices."""

from __future__ import annotations

import numpy as np
import pytest

from contracts import wirebytes
from remotegnn.mpi.messages import Credit, pack


@pytest.mark.parametrize(
    ("count", "dtype"), [(111_059_956, np.int32), (2**31, np.int32), (2**31 + 1, np.int64), (1, np.int32)]
)
def test_positions_are_int32_while_they_fit(count, dtype):
    assert wirebytes.position_dtype(count) == dtype


def test_local_indices_counts_and_labels_take_the_narrowest_type():
    assert wirebytes.local_index_dtype(65_536) == np.uint16 and wirebytes.local_index_dtype(65_537) == np.int32
    assert wirebytes.count_dtype(255) == np.uint8 and wirebytes.count_dtype(256) == np.uint16
    assert wirebytes.fanout_count_bytes([15, 10, 5]) == 1 and wirebytes.fanout_count_bytes([10, -1]) == 4
    assert wirebytes.label_bytes(128) == 1 and wirebytes.label_bytes(172) == 2 and wirebytes.label_bytes(None) == 0


def test_a_sampling_learner_trades_the_structure_frame_for_requests():
    memory = wirebytes.batch_overhead_bytes(2, learner_samples=False)
    learner = wirebytes.batch_overhead_bytes(2, learner_samples=True)
    single = wirebytes.frame_overhead_bytes(1)
    assert memory == wirebytes.frame_overhead_bytes(8) + single + 2 * wirebytes.CREDIT_BYTES
    assert learner == 2 * (2 * single + wirebytes.CREDIT_BYTES)
    both = wirebytes.batch_overhead_bytes(np.array([1.0, 4.0]), learner_samples=False)  # per cluster
    assert both[1] - both[0] == pytest.approx(3 * (single + wirebytes.CREDIT_BYTES))


def test_a_credit_is_the_size_priced():
    assert len(pack(Credit(session=7, upto=10**9))) == wirebytes.CREDIT_BYTES
