"""The one door to AWS: timing from the environment, error codes kept, one retry layer, one-line failures."""

from __future__ import annotations

import boto3
import pytest

from foundation.errors import UsageError
from provisioning.aws import Aws, Timing
from provisioning.errors import AwsError, ProvisioningError
from tests.provisioning.ec2fakes import ec2_error


def test_timing_from_environment():
    timing = Timing.from_env(
        {
            "MEMORYBRIDGE_AWS_POLL_SECONDS": "0.5",
            "MEMORYBRIDGE_AWS_WAIT_SECONDS": "10",
            "MEMORYBRIDGE_AWS_BACKOFF_SECONDS": "0.25",
        }
    )
    assert (timing.poll_s, timing.wait_timeout_s, timing.backoff.base_s) == (0.5, 10.0, 0.25)
    assert timing.waiter_config() == {"Delay": 0.5, "MaxAttempts": 20}
    assert Timing.from_env({}) == Timing()
    with pytest.raises(UsageError, match="MEMORYBRIDGE_AWS_POLL_SECONDS"):
        Timing.from_env({"MEMORYBRIDGE_AWS_POLL_SECONDS": "soon"})


def test_ec2_errors_keep_their_code_and_are_not_retried_by_botocore(aws, moto):
    moto.faults.on("DescribeVpcs", lambda p: ec2_error("UnauthorizedOperation", "You are not authorized.", 403))
    with pytest.raises(AwsError) as info:
        aws.call("describe_vpcs")
    assert (info.value.operation, info.value.code) == ("DescribeVpcs", "UnauthorizedOperation")
    assert str(info.value) == "DescribeVpcs: UnauthorizedOperation: You are not authorized."
    assert moto.faults.calls["DescribeVpcs"] == 1


def test_missing_credentials_and_region_are_one_line_errors(moto, monkeypatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key)
    boto3.setup_default_session()
    with pytest.raises(ProvisioningError, match="^AWS: Unable to locate credentials$"):
        Aws.connect("us-east-1").call("describe_vpcs")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    boto3.setup_default_session()
    with pytest.raises(UsageError, match="no AWS region"):
        Aws.connect(None)
