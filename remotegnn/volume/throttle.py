"""A token bucket on bytes/s and I/Os per second, paced by sleeping: the user-space emulation.

It uses virtual scheduling (the GCRA form of a token bucket): each limit keeps a theoretical
time at which everything charged so far has been transferred; a request is delivered when both
have passed it. Oversleeping does not accumulate, because the schedule, not the wake-up time,
sets the next deadline. ``TOLERANCE_S`` is the only burst allowed (gp3 has no burst credits):
over any window the volume moves at most the limit times (window + tolerance). The kernel's
blk-throttle grants a whole 100 ms slice of budget up front instead (see blkio.py).
"""

from __future__ import annotations

import time

TOLERANCE_S = 0.002


class TokenBucket:
    """Pace requests to ``bytes_per_s`` and ``ios_per_s``: ``deadline = charge(n)``, read, then
    ``wait_until(deadline)``, so the real read overlaps the emulated transfer time."""

    def __init__(self, bytes_per_s: float, ios_per_s: float, tolerance_s: float = TOLERANCE_S):
        if bytes_per_s <= 0 or ios_per_s <= 0 or tolerance_s < 0:
            raise ValueError("a token bucket needs positive rates and a non-negative tolerance")
        self._seconds_per_byte = 1.0 / bytes_per_s
        self._seconds_per_io = 1.0 / ios_per_s
        self._tolerance = tolerance_s
        self._bytes_done_at = 0.0
        self._ios_done_at = 0.0

    def charge(self, nbytes: int, ios: int = 1) -> float:
        """Book a request; returns the perf_counter time before which it must not be delivered."""
        now = time.perf_counter()
        self._bytes_done_at = max(self._bytes_done_at, now) + nbytes * self._seconds_per_byte
        self._ios_done_at = max(self._ios_done_at, now) + ios * self._seconds_per_io
        return max(self._bytes_done_at, self._ios_done_at) - self._tolerance

    @staticmethod
    def wait_until(deadline: float) -> float:
        """Sleep until ``deadline``; returns the seconds actually slept (0 when it has passed)."""
        start = time.perf_counter()
        if deadline <= start:
            return 0.0
        time.sleep(deadline - start)
        return time.perf_counter() - start
