"""fullgraph.exchange.pinch.aggregate: the receiver's arrays and, in user space, what the XDP program does."""

from __future__ import annotations

import numpy as np
import pytest

from fullgraph.exchange.pinch.aggregate import AggregateArrays, Aggregation, ArmedSender, Fed
from fullgraph.exchange.pinch.fixedpoint import (
    MANTISSA_MAX,
    MAX_CONTRIBUTIONS,
    MAX_SHIFT,
    X_MAX,
    contributions,
    quantize,
    to_records,
)
from fullgraph.exchange.pinch.wire import (
    CHUNK,
    MAX_SENDERS,
    R_OVERFLOW,
    R_SATURATED,
    RECORD,
    WINDOW,
    PacketType,
    WireError,
    pack_header,
    records_per_packet,
)

PER_PACKET = records_per_packet(1500)


def packets(sender: int, epoch: int, recs: np.ndarray, per_packet: int = PER_PACKET) -> list[bytes]:
    """``recs`` as the FIXED datagrams a sender cuts them into."""
    n = max(1, -(-len(recs) // per_packet))
    out = []
    for seq in range(n):
        chunk = recs[seq * per_packet : (seq + 1) * per_packet]
        header = pack_header(PacketType.FIXED, sender, epoch, seq=seq, packets=n, count=len(chunk), kind=3)
        out.append(header + chunk.tobytes())
    return out


def armed(sender: int, epoch: int, base: int, records: int) -> ArmedSender:
    return ArmedSender(sender, epoch, base, records, max(1, -(-records // PER_PACKET)))


def snapshot(a: AggregateArrays) -> tuple[bytes, bytes, bytes, bytes]:
    return a.aggregates.tobytes(), a.arms.tobytes(), a.seen.tobytes(), a.state.tobytes()


def test_in_memory_arrays_have_the_kernel_maps_shapes():
    a = AggregateArrays.in_memory(100)
    assert a.aggregates.shape == (100,) and a.arms.shape == (MAX_SENDERS,)
    assert a.seen.shape == (MAX_SENDERS, WINDOW) and a.seen.dtype == np.uint32 and a.state.shape == (1,)
    assert not a.aggregates.tobytes().strip(b"\0") and not a.state.tobytes().strip(b"\0")


def test_several_senders_sum_to_numpys_exact_integer_sum():
    rng = np.random.default_rng(0)
    values = 1000  # 63 records: 4 packets per sender
    xs = [rng.normal(0, 10.0**e, values).astype(np.float32) for e in (-3, 0, 5)]
    shifts = [to_records(x)["shift"] for x in xs]
    assert not shifts[0].any() and shifts[1].any() and (shifts[2] > 0).all()  # plain and shifted records
    agg = Aggregation(AggregateArrays.in_memory(64))
    senders = [armed(s, 1, 0, 63) for s in (0, 4, 31)]
    agg.arm(senders)
    datagrams = [d for s, x in zip(senders, xs) for d in packets(s.sender, 1, to_records(x))]
    order = rng.permutation(len(datagrams))  # interleaved, any order
    fed = [agg.feed(datagrams[i]) for i in order]
    assert fed.count(Fed.COMPLETED) == 1 and fed[-1] is Fed.COMPLETED and fed.count(Fed.ADDED) == len(fed) - 1
    assert agg.complete()
    expected = sum(quantize(x)[0] for x in xs)  # the int64 contributions, summed exactly
    result = agg.result(0, 63)
    np.testing.assert_array_equal(result["sum"].reshape(-1)[:values], expected)
    assert (result["sum"].reshape(-1)[values:] == 0).all()  # padding adds nothing
    assert (result["count"] == 3).all() and not result["flags"].any()
    state = agg.arrays.state[0]
    assert (int(state["received"]), int(state["expected"]), int(state["packets"])) == (189, 189, 12)
    assert int(state["duplicates"]) == int(state["errors"]) == int(state["passed"]) == 0


def test_senders_with_their_own_bases_land_side_by_side():
    agg = Aggregation(AggregateArrays.in_memory(30))
    a, b = np.arange(5 * CHUNK, dtype=np.float32), -np.arange(12 * CHUNK, dtype=np.float32)
    agg.arm([armed(2, 1, 0, 5), armed(9, 1, 5, 12)])
    for d in packets(2, 1, to_records(a)) + packets(9, 1, to_records(b)):
        agg.feed(d)
    assert agg.complete()
    np.testing.assert_array_equal(agg.result(0, 5)["sum"].reshape(-1), quantize(a)[0])
    np.testing.assert_array_equal(agg.result(5, 17)["sum"].reshape(-1), quantize(b)[0])
    assert (agg.result(0, 17)["count"] == 1).all()


def test_a_duplicated_packet_is_added_once():
    agg = Aggregation(AggregateArrays.in_memory(2 * PER_PACKET))
    agg.arm([armed(1, 1, 0, 2 * PER_PACKET)])
    d = packets(1, 1, to_records(np.ones(2 * PER_PACKET * CHUNK, dtype=np.float32)))
    assert len(d) == 2
    assert agg.feed(d[0]) is Fed.ADDED
    before = agg.arrays.aggregates.copy()
    assert agg.feed(d[0]) is Fed.DUPLICATE
    assert int(agg.arrays.state[0]["duplicates"]) == 1
    assert agg.feed(bytearray(d[0])) is Fed.DUPLICATE
    np.testing.assert_array_equal(agg.arrays.aggregates, before)
    state = agg.arrays.state[0]
    assert int(state["duplicates"]) == 2 and int(state["received"]) == PER_PACKET and int(state["packets"]) == 1
    assert agg.feed(d[1]) is Fed.COMPLETED
    assert agg.feed(d[1]) is Fed.DUPLICATE  # after completion too
    done = agg.result(0, 2 * PER_PACKET)
    assert (done["count"] == 1).all() and (done["sum"] == 1 << 32).all()


def test_stale_early_and_unarmed_packets_change_nothing_but_the_passed_count():
    agg = Aggregation(AggregateArrays.in_memory(10))
    recs = to_records(np.ones(10 * CHUNK, dtype=np.float32))
    agg.arm([armed(3, 2, 0, 10)])
    for datagram in (packets(3, 1, recs)[0], packets(3, 3, recs)[0], packets(4, 2, recs)[0]):
        before = snapshot(agg.arrays)
        assert agg.feed(datagram) is Fed.UNARMED
        after = snapshot(agg.arrays)
        assert after[:3] == before[:3]  # aggregates, arms, dedup window untouched
    state = agg.arrays.state[0]
    assert int(state["passed"]) == 3 and int(state["received"]) == 0 and int(state["packets"]) == 0
    # Once disarmed, the armed epoch's own packets pass too (and do not claim their slot).
    agg.disarm()
    assert agg.armed == [] and int(agg.arrays.arms[3]["epoch"]) == 0
    assert agg.feed(packets(3, 2, recs)[0]) is Fed.UNARMED
    assert not agg.arrays.seen.any() and not agg.arrays.aggregates["count"].any()


def test_completion_is_reported_by_exactly_the_last_packet():
    rng = np.random.default_rng(1)
    agg = Aggregation(AggregateArrays.in_memory(64))
    for trial in range(5):
        agg.arm([armed(0, 5 + trial, 0, 35), armed(1, 5 + trial, 35, 29)])
        datagrams = [
            d for s, n in ((0, 35), (1, 29)) for d in packets(s, 5 + trial, to_records(np.ones(n * CHUNK, np.float32)))
        ]
        order = rng.permutation(len(datagrams))
        for i, j in enumerate(order):
            assert not agg.complete()
            fed = agg.feed(datagrams[j])
            assert fed is (Fed.COMPLETED if i == len(order) - 1 else Fed.ADDED)
        assert agg.complete()
        assert (agg.result(0, 64)["count"] == 1).all()  # arm zeroed the last epoch's sums


def test_out_of_range_records_are_errors_and_not_added():
    agg = Aggregation(AggregateArrays.in_memory(16))
    agg.arm([armed(0, 1, 0, 4), armed(1, 1, 4, 4)])
    recs = np.zeros(5, dtype=RECORD)
    recs["index"] = [0, 3, 4, 1000, 2]  # 4 and 1000 are past sender 0's 4 records (4 is sender 1's first)
    recs["shift"] = [0, MAX_SHIFT, 0, 0, MAX_SHIFT + 1]  # index 2's shift is past the largest
    recs["value"] = 7
    header = pack_header(PacketType.FIXED, 0, 1, packets=1, count=5)
    assert agg.feed(header + recs.tobytes()) is Fed.ADDED
    a = agg.arrays.aggregates
    assert a["count"].tolist() == [1, 0, 0, 1] + [0] * 12
    assert (a["sum"][0] == 7).all() and (a["sum"][3] == 7 << MAX_SHIFT).all()
    assert not a["sum"][[1, 2, *range(4, 16)]].any()
    state = agg.arrays.state[0]
    assert int(state["errors"]) == 3
    assert int(state["received"]) == 5  # the packet's count, as the kernel program counts it


def test_malformed_datagrams_are_counted_and_dropped():
    agg = Aggregation(AggregateArrays.in_memory(4))
    agg.arm([armed(0, 1, 0, 4)])
    good = packets(0, 1, to_records(np.ones(4 * CHUNK, np.float32)))[0]
    assert agg.feed(good[:-1]) is Fed.MALFORMED
    assert agg.feed(b"\0" * 40) is Fed.MALFORMED
    beyond = pack_header(PacketType.FIXED, 0, 1, seq=WINDOW, packets=WINDOW + 1, count=1)
    assert agg.feed(beyond + np.zeros(1, RECORD).tobytes()) is Fed.MALFORMED  # past the dedup window
    assert int(agg.arrays.state[0]["errors"]) == 3 and not agg.arrays.aggregates["count"].any()
    with pytest.raises(ValueError, match="FIXED packets only"):
        agg.feed(pack_header(PacketType.READY, 0, 1))


def test_more_than_256_contributions_set_the_overflow_flag():
    agg = Aggregation(AggregateArrays.in_memory(2))
    n = MAX_CONTRIBUTIONS + 2
    agg.arm([ArmedSender(0, 1, 0, 2, n)])
    recs = to_records(np.full(CHUNK, X_MAX))  # one record, index 0, at +X_MAX (float32 would round past it)
    assert (recs["shift"] == MAX_SHIFT).all() and (recs["value"] == MANTISSA_MAX).all() and not recs["flags"].any()
    largest = MANTISSA_MAX << MAX_SHIFT
    assert (contributions(recs) == largest).all()
    for seq in range(n):
        header = pack_header(PacketType.FIXED, 0, 1, seq=seq, packets=n, count=1)
        agg.feed(header + recs.tobytes())
        a = agg.arrays.aggregates[0]
        assert int(a["count"]) == seq + 1
        assert bool(a["flags"] & R_OVERFLOW) == (seq + 1 > MAX_CONTRIBUTIONS)
        assert (a["sum"] == (seq + 1) * largest).all()  # never wrapped
        if seq + 1 == MAX_CONTRIBUTIONS:
            assert (a["sum"] == MAX_CONTRIBUTIONS * largest).all() and MAX_CONTRIBUTIONS * largest < 2**61
    assert int(agg.arrays.aggregates[1]["flags"]) == 0


def test_the_senders_saturation_flags_reach_the_aggregate():
    agg = Aggregation(AggregateArrays.in_memory(3))
    agg.arm([armed(0, 1, 0, 3), armed(1, 1, 0, 3)])
    x = np.zeros(3 * CHUNK, dtype=np.float32)
    x[20] = np.nan
    agg.feed(packets(0, 1, to_records(x))[0])
    agg.feed(packets(1, 1, to_records(np.zeros(3 * CHUNK, np.float32)))[0])
    assert agg.result(0, 3)["flags"].tolist() == [0, R_SATURATED, 0]


def test_missing_lists_exactly_the_sequence_numbers_not_yet_fed():
    rng = np.random.default_rng(2)
    agg = Aggregation(AggregateArrays.in_memory(400))
    sender = armed(6, 1, 0, 400)
    assert sender.packets == 20
    agg.arm([sender])
    datagrams = packets(6, 1, to_records(np.ones(400 * CHUNK, np.float32)))
    assert agg.missing(sender).tolist() == list(range(20))
    fed: set[int] = set()
    for seq in rng.permutation(20)[:13]:
        agg.feed(datagrams[seq])
        fed.add(int(seq))
        assert agg.missing(sender).tolist() == sorted(set(range(20)) - fed)
    assert agg.missing(sender).dtype == np.uint32
    # The next epoch starts with everything missing again, though the slots were claimed before.
    second = armed(6, 2, 0, 400)
    agg.arm([second])
    assert agg.missing(second).tolist() == list(range(20))
    assert agg.feed(packets(6, 2, to_records(np.ones(400 * CHUNK, np.float32)))[0]) is Fed.ADDED


def test_arm_zeroes_what_it_uses_and_resets_the_counters():
    agg = Aggregation(AggregateArrays.in_memory(8))
    agg.arm([armed(0, 1, 0, 8)])
    for d in packets(0, 1, to_records(np.ones(8 * CHUNK, np.float32) * 3)):
        agg.feed(d)
    assert agg.complete() and (agg.arrays.aggregates["count"] == 1).all()
    agg.arm([armed(0, 2, 0, 3), armed(5, 7, 3, 2)])
    a = agg.arrays.aggregates
    assert not a[:5]["sum"].any() and not a[:5]["count"].any() and not a[:5]["flags"].any()
    state = agg.arrays.state[0]
    assert (int(state["received"]), int(state["expected"])) == (0, 5)
    assert agg.arrays.arms[0].tolist() == (2, 0, 3, 0) and agg.arrays.arms[5].tolist() == (7, 3, 5, 0)
    assert not agg.complete()
    # senders of one sum share their range: the arms say so (the kernel adds atomically there)
    agg.arm([armed(0, 3, 0, 4), armed(5, 8, 0, 4)])
    assert agg.arrays.arms[0].tolist() == (3, 0, 4, 1) and agg.arrays.arms[5].tolist() == (8, 0, 4, 1)


def test_a_growable_aggregation_grows_and_a_fixed_one_says_so():
    growable = Aggregation(AggregateArrays.in_memory(CHUNK), growable=True)
    growable.arm([armed(0, 1, 0, 40)])
    assert growable.capacity == 40
    growable.arm([armed(0, 2, 0, 50)])
    assert growable.capacity == 80  # doubles when that is more
    for d in packets(0, 2, to_records(np.ones(50 * CHUNK, np.float32))):
        growable.feed(d)
    assert growable.complete() and (growable.result(0, 50)["count"] == 1).all()
    fixed = Aggregation(AggregateArrays.in_memory(CHUNK))
    with pytest.raises(WireError, match="needs 17 aggregates and the receiver holds 16: raise the exchange's capacity"):
        fixed.arm([armed(0, 1, 0, 9), armed(1, 1, 9, 8)])
    assert fixed.capacity == CHUNK and not fixed.arrays.arms.tobytes().strip(b"\0")  # nothing armed
    fixed.arm([armed(0, 1, 0, 16)])  # exactly full is fine
