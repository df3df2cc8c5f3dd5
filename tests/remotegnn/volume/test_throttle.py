"""The token bucket's schedule: both limits bind, lateness is made up, idleness is not banked."""

from __future__ import annotations

import time

import pytest

from remotegnn.volume.throttle import TokenBucket


def test_the_tighter_limit_sets_the_pace():
    bucket = TokenBucket(bytes_per_s=1e6, ios_per_s=100, tolerance_s=0)
    bucket.begin()
    start = time.perf_counter()
    iops_bound = [bucket.charge(1000) for _ in range(3)]  # 1 ms of bytes, 10 ms per I/O
    assert [round(d - start, 3) for d in iops_bound] == [0.01, 0.02, 0.03]
    bytes_bound = bucket.charge(100_000)  # 100 ms of bytes from the bytes schedule (3 ms so far)
    assert bytes_bound - start == pytest.approx(0.103, abs=1e-3)


def test_a_late_wake_up_is_made_up_within_a_read():
    bucket = TokenBucket(bytes_per_s=1e9, ios_per_s=1000, tolerance_s=0)
    bucket.begin()
    first = bucket.charge(1)
    time.sleep(0.02)  # 20 ms late: the next 19 requests are already due
    due = [bucket.charge(1) for _ in range(19)]
    assert all(TokenBucket.wait_until(d) == 0 for d in due)
    assert bucket.charge(1) - first == pytest.approx(0.02)


def test_idle_time_earns_at_most_the_tolerance():
    bucket = TokenBucket(bytes_per_s=1e9, ios_per_s=100, tolerance_s=0.005)
    bucket.begin()
    bucket.charge(1)
    time.sleep(0.05)
    bucket.begin()
    now = time.perf_counter()
    assert bucket.charge(1) - now == pytest.approx(0.01 - 0.005, abs=1e-3)


def test_wait_until_sleeps_to_the_deadline():
    deadline = time.perf_counter() + 0.01
    slept = TokenBucket.wait_until(deadline)
    assert slept >= 0.0095 and time.perf_counter() >= deadline
    with pytest.raises(ValueError):
        TokenBucket(0, 1)
