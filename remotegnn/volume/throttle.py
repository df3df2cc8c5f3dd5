"""A token bucket on bytes/s and I/Os per second, paced by sleeping: the user-space emulation.

It uses virtual scheduling (the GCRA form of a token bucket): each limit keeps the theoretical
time at which everything charged so far has been transferred, and a request is delivered when
both times have passed. Within one read (``begin()`` to the last ``charge``) the schedule only
moves forward by the requests' costs, so a late wake-up or a slow disk moment is made up by
later requests instead of being lost: a read of cost C takes at least C - TOLERANCE_S, and on
a busy 2-core machine it lands within a few per cent of C, where pacing each request from "now"
ran 10-25% slow. Idle time before a read earns at most TOLERANCE_S of credit (gp3 has no burst
credits); the kernel's blk-throttle grants a whole 100 ms slice up front instead (blkio.py).
"""

from __future__ import annotations

import time

TOLERANCE_S = 0.002


class TokenBucket:
    """Pace requests to ``bytes_per_s`` and ``ios_per_s``: ``begin()`` once per read, then per
    request ``deadline = charge(n)``, read, ``wait_until(deadline)``, so the real read overlaps
    the emulated transfer time."""

    def __init__(self, bytes_per_s: float, ios_per_s: float, tolerance_s: float = TOLERANCE_S):
        if bytes_per_s <= 0 or ios_per_s <= 0 or tolerance_s < 0:
            raise ValueError("a token bucket needs positive rates and a non-negative tolerance")
        self._seconds_per_byte = 1.0 / bytes_per_s
        self._seconds_per_io = 1.0 / ios_per_s
        self._tolerance = tolerance_s
        self._bytes_done_at = 0.0
        self._ios_done_at = 0.0

    def begin(self) -> None:
        """Start a read: time the volume sat idle counts for at most the tolerance."""
        floor = time.perf_counter() - self._tolerance
        self._bytes_done_at = max(self._bytes_done_at, floor)
        self._ios_done_at = max(self._ios_done_at, floor)

    def charge(self, nbytes: int, ios: int = 1) -> float:
        """Book a request; returns the perf_counter time before which it must not be delivered."""
        self._bytes_done_at += nbytes * self._seconds_per_byte
        self._ios_done_at += ios * self._seconds_per_io
        return max(self._bytes_done_at, self._ios_done_at)

    @staticmethod
    def wait_until(deadline: float) -> float:
        """Sleep until ``deadline``; returns the seconds actually slept (0 when it has passed)."""
        start = time.perf_counter()
        if deadline <= start:
            return 0.0
        time.sleep(deadline - start)
        return time.perf_counter() - start
