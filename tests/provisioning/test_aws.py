"""The one door to AWS: timing from the environment, error codes kept, one retry layer, one-line failures,
also for answers that are not AWS's and endpoints that do not answer."""

from __future__ import annotations

import boto3
import pytest
from botocore.parsers import ResponseParserError

from foundation.errors import UsageError
from provisioning.aws import AWS_ENDPOINT_FIX, OTHER_ENDPOINT_FIX, Aws, Timing, endpoint_fix
from provisioning.errors import AwsError, EndpointError, ProvisioningError
from tests.provisioning.conftest import unused_endpoint
from tests.provisioning.ec2fakes import ec2_error, html_page


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
    with pytest.raises(ProvisioningError, match="^DescribeVpcs: no AWS credentials found; configure them"):
        Aws.connect("us-east-1").call("describe_vpcs")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    boto3.setup_default_session()
    with pytest.raises(UsageError, match="no AWS region"):
        Aws.connect(None)


# (status, body): moto's own page for a call it lacks, a bare page, an empty gateway error, a page served with 200.
NOT_AWS_ANSWERS = {
    "moto's error page": (500, b"<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n"),
    "a bare html page": (500, b"<html><body><b>Internal Server Error</b></body></html>"),
    "an empty gateway error": (502, b""),
    "a page with 200": (200, b"<!doctype html><html><body>Welcome</body></html>"),
}


@pytest.mark.parametrize("answer", NOT_AWS_ANSWERS.values(), ids=NOT_AWS_ANSWERS.keys())
def test_an_answer_that_is_not_aws_is_one_line_naming_the_call_and_the_endpoint(aws, moto, answer):
    moto.faults.on("DescribeVpcs", lambda p: html_page(*answer))
    with pytest.raises(EndpointError) as info:
        aws.call("describe_vpcs")
    message = str(info.value)
    assert message.startswith(f"DescribeVpcs: {moto.url} answered ") and "\n" not in message
    assert message.endswith(OTHER_ENDPOINT_FIX) and "<" not in message
    assert moto.faults.calls["DescribeVpcs"] == 1  # not retried: asking again gets the same page


def test_paginated_calls_and_waiters_name_their_call_too(aws, moto):
    moto.faults.on("DescribeInstances", lambda p: html_page(500, b"<html></html>"))
    with pytest.raises(EndpointError, match="^DescribeInstances: "):
        aws.items("describe_instances", "Reservations")
    with pytest.raises(EndpointError, match="^DescribeInstances: .* answered HTTP 500 "):
        aws.wait("instance_running", "instances to run", InstanceIds=["i-0123456789abcdef0"])


def test_an_endpoint_nobody_listens_on_is_one_line_naming_the_call(moto, monkeypatch):
    url = unused_endpoint()
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    boto3.setup_default_session()
    with pytest.raises(EndpointError) as info:
        Aws.connect("us-east-1").call("describe_vpcs")
    assert str(info.value) == f'DescribeVpcs: Could not connect to the endpoint URL: "{url}/"; {OTHER_ENDPOINT_FIX}'


def test_aws_own_endpoints_get_advice_about_the_network_others_about_the_endpoint_setting():
    assert endpoint_fix("https://ec2.us-east-1.amazonaws.com") == AWS_ENDPOINT_FIX
    assert endpoint_fix("https://ec2.cn-north-1.amazonaws.com.cn") == AWS_ENDPOINT_FIX
    assert endpoint_fix("http://127.0.0.1:5000") == OTHER_ENDPOINT_FIX
    assert endpoint_fix("https://amazonaws.com.evil.example") == OTHER_ENDPOINT_FIX


# (service, method, its parameters, the operation's name, what the service answers in)
UNREADABLE = {
    "EC2": ("ec2", "describe_vpcs", {}, "DescribeVpcs", "EC2's XML"),
    "SSM": ("ssm", "get_parameter", {"Name": "/aws/service/ami"}, "GetParameter", "SSM's JSON"),
}


@pytest.mark.parametrize(
    ("service", "method", "params", "operation", "answers_in"), UNREADABLE.values(), ids=UNREADABLE
)
def test_an_answer_the_parser_cannot_read_names_what_the_service_answers_in(
    moto, service, method, params, operation, answers_in
):
    """EC2 answers in XML and SSM in JSON, and the line says which the endpoint failed to give.
    (botocore's JSON parser takes most pages as an empty answer; what it cannot read is this error.)"""

    def unreadable(**_):
        raise ResponseParserError("no answer of this service")

    boto3.DEFAULT_SESSION.events.register(f"before-send.{service}", unreadable)
    aws = Aws.connect("us-east-1")  # its clients copy the session's handlers, this one included
    with pytest.raises(EndpointError) as info:
        aws.call(method, service=service, **params)
    assert str(info.value).startswith(f"{operation}: {moto.url} answered something that is not {answers_in} ")
