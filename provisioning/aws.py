"""One region's EC2 and SSM clients, and the only way this package calls them.

Every call goes through :meth:`Aws.call` (retry with backoff, EC2 errors turned into
:class:`~provisioning.errors.AwsError` with their code) and every wait through :meth:`Aws.wait`
(botocore's waiters with the configured poll interval, so tests against moto poll in milliseconds
and real AWS every few seconds). Clients come from boto3's default session: credentials follow
the standard chain (environment, profile, SSO, instance role) and are never read, printed or
stored here.

Whatever else can go wrong on the way is turned into one line naming the call, here and nowhere
else: no credentials, an endpoint that cannot be reached, and an answer that is not AWS's (an HTML
error page, a bare HTTP status), which is what an endpoint set with ``AWS_ENDPOINT_URL`` gives for
a call it does not implement (moto's server for placement groups).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, WaiterError
from botocore.exceptions import ConnectionError as EndpointUnreachable
from botocore.parsers import ResponseParserError

from foundation.errors import UsageError
from provisioning.errors import AwsError, EndpointError, ProvisioningError, WaitError
from provisioning.retry import Backoff, call_with_retry, error_code

POLL_ENV = "MEMORYBRIDGE_AWS_POLL_SECONDS"
WAIT_ENV = "MEMORYBRIDGE_AWS_WAIT_SECONDS"
BACKOFF_ENV = "MEMORYBRIDGE_AWS_BACKOFF_SECONDS"

# One retry layer (provisioning.retry), not two: botocore's own retries would add unconfigurable
# sleeps under ours.
CLIENT_CONFIG = Config(retries={"total_max_attempts": 1}, user_agent_extra="memorybridge-provision")

# Hosts of AWS's own endpoints; any other endpoint was named by AWS_ENDPOINT_URL or a profile's endpoint_url.
AWS_DOMAINS = ("amazonaws.com", "amazonaws.com.cn", "api.aws")
NO_CREDENTIALS = (
    "no AWS credentials found; configure them (`aws configure`, AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY); `provision up --dry-run` works without them"
)
AWS_ENDPOINT_FIX = "check the network (and HTTPS_PROXY, if a proxy is in between) and try again"
OTHER_ENDPOINT_FIX = (
    "check that AWS_ENDPOINT_URL (or the profile's endpoint_url) names a running endpoint that implements "
    "this call, or unset it to use AWS"
)
# What a service answers in, by botocore's name of its protocol: EC2 (ec2) and the query and
# rest-xml services answer in XML, SSM (json) and the other JSON services in JSON.
ANSWER_FORMATS = {"ec2": "XML", "query": "XML", "rest-xml": "XML", "json": "JSON", "rest-json": "JSON"}
ANY_FORMAT = "answers"  # a protocol not listed: "not SERVICE's answers"


@dataclass(frozen=True)
class Timing:
    """How often waiters poll, how long they wait, and the retry backoff."""

    poll_s: float = 5.0
    wait_timeout_s: float = 1800.0
    backoff: Backoff = field(default_factory=Backoff)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Timing:
        """Defaults, overridden by MEMORYBRIDGE_AWS_POLL_SECONDS / _WAIT_SECONDS / _BACKOFF_SECONDS."""

        def number(name: str, default: float) -> float:
            raw = environ.get(name)
            if raw is None:
                return default
            try:
                value = float(raw)
            except ValueError:
                value = -1.0
            if value < 0:
                raise UsageError(f"{name}={raw!r} is not a number of seconds >= 0")
            return value

        base = cls()
        return cls(
            poll_s=number(POLL_ENV, base.poll_s),
            wait_timeout_s=number(WAIT_ENV, base.wait_timeout_s),
            backoff=Backoff(
                base_s=number(BACKOFF_ENV, base.backoff.base_s),
                cap_s=base.backoff.cap_s,
                max_attempts=base.backoff.max_attempts,
            ),
        )

    def waiter_config(self) -> dict[str, float]:
        return {"Delay": self.poll_s, "MaxAttempts": max(1, math.ceil(self.wait_timeout_s / max(self.poll_s, 0.001)))}


def default_session() -> boto3.Session:
    """boto3's default session (created on first use), so every client shares its event hooks."""
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    return boto3.DEFAULT_SESSION


def credentials_found() -> bool:
    """Whether boto3's standard chain finds credentials, so that a dry run knows it can ask AWS.

    Looking asks no AWS API (on an EC2 machine it may ask the instance metadata service); a broken
    configuration, such as an AWS_PROFILE that does not exist, is an error rather than "none".
    """
    try:
        return default_session().get_credentials() is not None
    except BotoCoreError as exc:
        raise UsageError(f"AWS credentials: {exc}") from None


def require_credentials() -> None:
    """Fail before anything is built or asked when no call could be signed."""
    if not credentials_found():
        raise ProvisioningError(NO_CREDENTIALS)


def endpoint_fix(endpoint: str) -> str:
    """What to do when ``endpoint`` cannot be reached or answers something that is not AWS's."""
    host = urlparse(endpoint).hostname or ""
    return AWS_ENDPOINT_FIX if host.endswith(AWS_DOMAINS) else OTHER_ENDPOINT_FIX


class Aws:
    """The EC2 and SSM clients of one region with the retry policy and waiter timing every call uses."""

    def __init__(self, ec2, ssm, timing: Timing | None = None, on_retry: Callable[[str, float], None] | None = None):
        self.ec2, self.ssm = ec2, ssm
        self.timing = timing or Timing()
        self.on_retry = on_retry

    @classmethod
    def connect(
        cls, region: str | None, timing: Timing | None = None, on_retry: Callable[[str, float], None] | None = None
    ) -> Aws:
        session = default_session()
        region = region or session.region_name
        if not region:
            raise UsageError("no AWS region: pass --region or set AWS_DEFAULT_REGION (or a profile's region)")
        ec2, ssm = (session.client(service, region_name=region, config=CLIENT_CONFIG) for service in ("ec2", "ssm"))
        return cls(ec2, ssm, timing, on_retry)

    @property
    def region(self) -> str:
        return self.ec2.meta.region_name

    def call(self, method: str, *, service: str = "ec2", extra_codes: tuple[str, ...] = (), **params: Any) -> dict:
        """``client.method(**params)`` with retries; AWS errors become AwsError (code kept)."""
        client = self.ssm if service == "ssm" else self.ec2
        return _guard(
            client,
            method,
            lambda: call_with_retry(
                lambda: getattr(client, method)(**params),
                self.timing.backoff,
                extra_codes=extra_codes,
                on_retry=self.on_retry,
            ),
        )

    def items(self, method: str, key: str, **params: Any) -> list[dict]:
        """Every item under ``key`` of every page of an EC2 describe call."""
        paginator = self.ec2.get_paginator(method)
        return _guard(
            self.ec2,
            method,
            lambda: call_with_retry(
                lambda: [item for page in paginator.paginate(**params) for item in page.get(key, [])],
                self.timing.backoff,
                on_retry=self.on_retry,
            ),
        )

    def wait(self, waiter: str, what: str, **params: Any) -> None:
        """Wait with an EC2 waiter; a failure state or a timeout raises WaitError naming ``what``."""
        polled = self.ec2.get_waiter(waiter)
        try:
            _guard(
                self.ec2,
                polled.config.operation,
                lambda: call_with_retry(
                    lambda: polled.wait(**params, WaiterConfig=self.timing.waiter_config()),
                    self.timing.backoff,
                    on_retry=self.on_retry,
                ),
            )
        except WaiterError as exc:
            raise WaitError(f"waiting for {what}: {exc.kwargs.get('reason', exc)}") from None


def _guard(client: Any, name: str, run: Callable[[], Any]) -> Any:
    """``run()``, with whatever it raises on the way to AWS as one line naming the call: ``name`` is
    the client's method or the API operation (``describe_placement_groups``, ``DescribeInstances``)."""
    operation = client.meta.method_to_api_mapping.get(name, name)
    endpoint = client.meta.endpoint_url
    try:
        return run()
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = error.get("Code", "Unknown")
        if code.isdigit():
            raise _bare_status(operation, endpoint, code, error.get("Message", "")) from None
        raise AwsError(exc.operation_name, code, error.get("Message", "")) from None
    except WaiterError as exc:
        code = error_code(exc) or ""
        if code.isdigit():
            raise _bare_status(operation, endpoint, code, exc.last_response["Error"].get("Message", "")) from None
        raise
    except ResponseParserError:  # an HTML error page, or anything else the service's parser cannot read
        service = client.meta.service_model
        answers_in = ANSWER_FORMATS.get(service.protocol, ANY_FORMAT)
        raise EndpointError(
            operation,
            f"{endpoint} answered something that is not {service.service_id}'s {answers_in} "
            f"(an error page?); {endpoint_fix(endpoint)}",
        ) from None
    except NoCredentialsError:
        raise ProvisioningError(f"{operation}: {NO_CREDENTIALS}") from None
    except EndpointUnreachable as exc:
        raise EndpointError(operation, f"{exc}; {endpoint_fix(endpoint)}") from None
    except BotoCoreError as exc:  # botocore's text names no secret
        raise ProvisioningError(f"{operation}: {exc}") from None


def _bare_status(operation: str, endpoint: str, status: str, reason: str) -> EndpointError:
    """botocore's error for an answer with an error status but no AWS error in it (an empty body, an
    HTML page): its code is the HTTP status."""
    return EndpointError(
        operation, f"{endpoint} answered HTTP {status} {reason} without an AWS error in it; {endpoint_fix(endpoint)}"
    )
