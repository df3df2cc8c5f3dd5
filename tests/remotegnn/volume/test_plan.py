"""The read plan on a hand-computed case, and windows + gather against a plain slice, no disk."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn.volume.limits import PAGE, VolumeLimits
from remotegnn.volume.plan import RowLayout, gather_rows, plan_reads, windows, word_dtype

# Rows of 12 bytes after a 128-byte header: row n covers bytes [128 + 12n, 140 + 12n).
# node 0 -> page 0; node 330 -> bytes 4088..4099, pages 0-1; node 1000 -> page 2;
# node 3000 -> page 8; node 4000 -> page 11 (pages 9-10 are a gap of 2: merged).
LAYOUT = RowLayout(offset=128, row_bytes=12, gap_pages=2, max_pages=2)
NODES = np.array([0, 330, 1000, 3000, 4000])


def test_hand_computed_plan():
    plan = plan_reads(NODES, LAYOUT)
    # Runs: pages 0-2 and 8-11, cut into requests of at most 2 pages.
    assert plan.req_offset.tolist() == [0, 2 * PAGE, 8 * PAGE, 10 * PAGE]
    assert plan.req_pages.tolist() == [2, 1, 2, 2]
    assert plan.req_pos.tolist() == [0, 2, 3, 5]
    assert plan.pages == 7
    assert plan.row_pos.tolist() == [128, 4088, 2 * PAGE + 3936, 3 * PAGE + 3360, 6 * PAGE + 3072]
    assert plan.row_end.tolist() == [1, 2, 3, 4, 7]


def test_gap_larger_than_limit_splits_runs():
    plan = plan_reads(NODES, RowLayout(offset=128, row_bytes=12, gap_pages=1, max_pages=64))
    assert plan.req_offset.tolist() == [0, 8 * PAGE, 11 * PAGE]
    assert plan.req_pages.tolist() == [3, 1, 1]


def test_merge_gap_follows_the_limits():
    assert VolumeLimits().merge_gap_pages == 10  # 125e6 / 3000 = 41,667 B: ten pages cost less than one I/O
    assert VolumeLimits(mb_per_s=1, iops=3000).merge_gap_pages == 0


@pytest.mark.parametrize("row_bytes", [12, 512, 6000])
@pytest.mark.parametrize("capacity", [None, 0])
def test_windows_and_gather_reproduce_the_rows(row_bytes, capacity):
    """Reading each window's requests into a bounded buffer (carrying a cut row over) and
    gathering gives the same bytes as slicing the file."""
    rng = np.random.default_rng(row_bytes)
    num_rows, offset = 3000, 128
    file = rng.integers(0, 256, offset + num_rows * row_bytes, dtype=np.uint8)
    layout = RowLayout(offset=offset, row_bytes=row_bytes, gap_pages=3, max_pages=4)
    nodes = np.unique(rng.integers(0, num_rows, 700))
    plan = plan_reads(nodes, layout)
    pages = plan.pages if capacity is None else layout.max_pages + layout.row_span_pages
    buffer = np.zeros(pages * PAGE, dtype=np.uint8)
    out = np.zeros((len(nodes), row_bytes), dtype=np.uint8)
    loads = carried = 0
    for w in windows(plan, pages):
        carried += w.carry_pages > 0
        src = w.carry_from * PAGE
        buffer[: w.carry_pages * PAGE] = buffer[src : src + w.carry_pages * PAGE].copy()
        for k in range(w.k0, w.k1):
            chunk = file[plan.req_offset[k] : plan.req_offset[k] + plan.req_pages[k] * PAGE]
            at = (plan.req_pos[k] - w.base) * PAGE
            buffer[at : at + len(chunk)] = chunk
        gather_rows(buffer, plan.row_pos[w.r0 : w.r1] - w.base * PAGE, out[w.r0 : w.r1])
        loads += 1
    starts = offset + nodes * row_bytes
    expected = file[starts[:, None] + np.arange(row_bytes)]
    np.testing.assert_array_equal(out, expected)
    assert (loads == 1) == (capacity is None)
    if row_bytes > PAGE and capacity == 0:
        assert carried, "rows wider than a page must be cut by some window and carried over"


def test_windows_refuse_a_buffer_smaller_than_a_request():
    plan = plan_reads(NODES, LAYOUT)
    with pytest.raises(ValueError, match="cannot hold"):
        list(windows(plan, 1))


@pytest.mark.parametrize(
    "offset, row_bytes, word", [(128, 512, "u8"), (128, 12, "u4"), (128, 74, "u2"), (128, 3, "u1"), (6, 8, "u2")]
)
def test_word_divides_offset_and_row(offset, row_bytes, word):
    assert word_dtype(RowLayout(offset=offset, row_bytes=row_bytes, gap_pages=0, max_pages=1)) == np.dtype(word)
