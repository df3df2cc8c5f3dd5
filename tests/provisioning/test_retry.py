"""Full-jitter exponential backoff, and which errors are retried."""

from __future__ import annotations

import random

import pytest
from botocore.exceptions import ClientError, WaiterError

from provisioning.retry import Backoff, call_with_retry, error_code, is_retryable


def client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, "RunInstances")


def test_delays_grow_exponentially_up_to_the_cap_with_jitter():
    backoff = Backoff(base_s=1.0, cap_s=8.0)
    rng = random.Random(7)
    samples = {retry: [backoff.delay(retry, rng) for _ in range(400)] for retry in range(6)}
    for retry, delays in samples.items():
        ceiling = min(8.0, 2.0**retry)
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > 0.8 * ceiling and min(delays) < 0.2 * ceiling  # spread over the whole range
    assert len(set(samples[3])) == len(samples[3])  # jitter: no two clients retry in lock-step


def test_throttling_is_retried_until_it_succeeds():
    failures = iter([client_error("RequestLimitExceeded"), client_error("Throttling")])
    seen = []

    def call():
        error = next(failures, None)
        if error:
            raise error
        return "ok"

    assert call_with_retry(call, Backoff(base_s=0.0), on_retry=lambda code, delay: seen.append(code)) == "ok"
    assert seen == ["RequestLimitExceeded", "Throttling"]


def test_other_errors_are_raised_at_once_and_retries_are_bounded():
    calls = []

    def fail(code):
        def call():
            calls.append(code)
            raise client_error(code)

        return call

    with pytest.raises(ClientError):
        call_with_retry(fail("InvalidParameterValue"), Backoff(base_s=0.0))
    assert calls == ["InvalidParameterValue"]
    with pytest.raises(ClientError):
        call_with_retry(fail("InternalError"), Backoff(base_s=0.0, max_attempts=3))
    assert calls.count("InternalError") == 3


def test_extra_codes_and_waiter_errors():
    assert not is_retryable(client_error("DependencyViolation"))
    assert is_retryable(client_error("DependencyViolation"), ("DependencyViolation",))
    waited = WaiterError("InstanceRunning", "throttled", {"Error": {"Code": "RequestLimitExceeded"}})
    assert error_code(waited) == "RequestLimitExceeded" and is_retryable(waited)
    assert error_code(ValueError()) is None
