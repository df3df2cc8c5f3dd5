"""Exponential backoff with full jitter for throttled and transient AWS errors.

EC2 throttles per account and per API (``RequestLimitExceeded``); a cluster launch that gives up at
the first throttle, or that retries in lock-step with other clients, fails exactly when an account
is busy. Every AWS call of this package goes through :func:`call_with_retry` (botocore's own retries
are switched off in :mod:`provisioning.aws`, so there is one retry layer with one configurable
base). The delay before retry *n* is uniform in ``[0, min(cap, base * 2**n)]`` ("full jitter").
Retrying is safe: mutating calls carry a ClientToken or are idempotent by name.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TypeVar

from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError, WaiterError

T = TypeVar("T")

THROTTLING_CODES = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestThrottledException",
        "ThrottledException",
    }
)
TRANSIENT_CODES = frozenset(
    {
        "InternalError",
        "InternalFailure",
        "ServiceUnavailable",
        "Unavailable",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)
RETRY_CODES = THROTTLING_CODES | TRANSIENT_CODES


@dataclass(frozen=True)
class Backoff:
    base_s: float = 0.5
    cap_s: float = 20.0
    max_attempts: int = 8

    def delay(self, retry: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (0-based): full jitter."""
        return rng.uniform(0.0, min(self.cap_s, self.base_s * 2**retry))


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a failed call or a waiter that met an error, else None."""
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code")
    if isinstance(exc, WaiterError):
        return (exc.last_response or {}).get("Error", {}).get("Code")
    return None


def is_retryable(exc: BaseException, extra_codes: Collection[str] = ()) -> bool:
    if isinstance(exc, (ConnectionClosedError, ReadTimeoutError)):
        return True
    code = error_code(exc)
    return code is not None and (code in RETRY_CODES or code in extra_codes)


def call_with_retry(
    call: Callable[[], T],
    backoff: Backoff,
    *,
    extra_codes: Collection[str] = (),
    rng: random.Random | None = None,
    on_retry: Callable[[str, float], None] | None = None,
) -> T:
    """Run ``call``; on a retryable error wait with backoff and run it again, up to max_attempts times.

    ``extra_codes`` adds codes that are transient for this call only (``DependencyViolation`` while
    a deleted instance still holds a security group). ``on_retry(code, delay)`` reports each retry.
    """
    rng = rng or random.Random()
    retry = 0
    while True:
        try:
            return call()
        except (ClientError, WaiterError, ConnectionClosedError, ReadTimeoutError) as exc:
            if retry + 1 >= backoff.max_attempts or not is_retryable(exc, extra_codes):
                raise
            delay = backoff.delay(retry, rng)
            if on_retry:
                on_retry(error_code(exc) or type(exc).__name__, delay)
            time.sleep(delay)
            retry += 1
