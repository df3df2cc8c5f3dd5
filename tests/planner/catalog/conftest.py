"""Fixtures for the price catalog tests: the real price table, a moto server and a fake Price List API.

AWS is reached only through real boto3 clients talking HTTP to local endpoints:

* EC2 -> moto in server mode (``ThreadedMotoServer`` on 127.0.0.1, a free port), with instance
  type validation switched on so moto behaves like AWS for unknown types.
* Pricing -> moto does not implement the Price List API, so :class:`FakePriceListServer` answers
  the awsJson1_1 ``AWSPriceListService.GetProducts`` call the way AWS does: it applies the
  request's TERM_MATCH filters, pages with ``NextToken`` and returns ``PriceList`` as JSON strings.
* The Spot Instance Advisor's public data file -> :class:`FileServer` serves a document in its
  format (:func:`advisor_document`); by default (``aws_env``) the advisor's address refuses
  connections, so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.moto_server import running_moto

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED_DIR = REPO_ROOT / ".." / "shared"
REAL_PRICE_CSV = SHARED_DIR / "reference" / "aws-ec2-prices-us-east-1.csv"
SHIPPED_SNAPSHOT_FILE = REPO_ROOT / "pricing_data" / "aws-us-east-1.json"
DATA_DIR = Path(__file__).resolve().parent / "data"

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "MOTO_EC2_ENABLE_INSTANCE_TYPE_VALIDATION": "true",
    "MEMORYBRIDGE_SPOT_ADVISOR_URL": "http://127.0.0.1:9/spot-advisor-data.json",  # the discard port: refused
}
# AWS's frequency-of-interruption ranges as the advisor's data file gives them (index, label, max %).
ADVISOR_RANGES = [(0, "<5%", 5), (1, "5-10%", 11), (2, "10-15%", 16), (3, "15-20%", 22), (4, ">20%", 100)]


def advisor_document(bands: dict[str, int], region: str = "us-east-1") -> bytes:
    """A Spot Instance Advisor data file giving ``bands`` (type -> band index) for Linux in ``region``
    (and a Windows entry and another region, which must be ignored)."""
    return json.dumps(
        {
            "global_rate": "<10%",
            "instance_types": {name: {"emr": False, "cores": 4, "ram_gb": 16.0} for name in bands},
            "ranges": [{"index": i, "label": label, "dots": i, "max": top} for i, label, top in ADVISOR_RANGES],
            "spot_advisor": {
                region: {
                    "Linux": {name: {"s": 60, "r": band} for name, band in bands.items()},
                    "Windows": {name: {"s": 50, "r": 4} for name in bands},
                },
                "eu-west-1": {"Linux": {name: {"s": 70, "r": 4} for name in bands}},
            },
        }
    ).encode()


class FileServer:
    """Serves ``body`` at every GET on 127.0.0.1 (a free port)."""

    def __init__(self, body: bytes):
        self.body = body
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                self.wfile.write(server.body)

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/spot-advisor-data.json"

    def __enter__(self) -> FileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


@pytest.fixture(scope="session")
def real_price_csv() -> Path:
    """The real us-east-1 price table from ../shared (skip when this checkout has no shared dir)."""
    if not REAL_PRICE_CSV.is_file():
        pytest.skip(f"the real price table {REAL_PRICE_CSV} is absent (../shared is not checked out)")
    return REAL_PRICE_CSV.resolve()


@pytest.fixture(scope="module")
def aws_env():
    """Fake credentials and moto settings in os.environ for one test module (restored afterwards).

    Config and credential files are pointed at nothing so a developer's ~/.aws cannot leak in.
    """
    with pytest.MonkeyPatch.context() as mp:
        for key, value in AWS_ENV.items():
            mp.setenv(key, value)
        mp.setenv("AWS_CONFIG_FILE", os.devnull)
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        for key in [k for k in os.environ if k.startswith("AWS_ENDPOINT_URL") or k == "AWS_PROFILE"]:
            mp.delenv(key)
        yield dict(os.environ)


@pytest.fixture(scope="module")
def moto_url(aws_env) -> str:
    """A moto server on 127.0.0.1 (free port); the environment is set before it starts."""
    with running_moto() as url:
        yield url


@pytest.fixture(scope="module")
def ec2_client(moto_url):
    import boto3

    return boto3.client("ec2", endpoint_url=moto_url, region_name="us-east-1")


class FakePriceListServer:
    """A local stand-in for the AWS Price List Query API (``GetProducts`` only).

    ``documents`` are Price List product documents (dicts); the server filters them with the
    request's TERM_MATCH filters against ``product.attributes`` (as AWS does), and answers in pages
    of ``page_size`` with an opaque ``NextToken``. ``error`` = (status, __type, message) makes
    every call fail with that awsJson error. Every request is recorded in ``requests``.
    """

    TARGET = "AWSPriceListService.GetProducts"

    def __init__(
        self, documents: list[dict[str, Any]], page_size: int | None = None, error: tuple[int, str, str] | None = None
    ):
        self.documents = documents
        self.page_size = page_size
        self.error = error
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakePriceListServer:
        self._thread.start()  # the socket is already listening (bound in __init__)
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def answer(self, target: str | None, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append({"target": target, "body": body})
        if target != self.TARGET:
            return 400, {"__type": "UnknownOperationException", "message": f"unknown operation {target!r}"}
        if self.error:
            status, code, message = self.error
            return status, {"__type": code, "Message": message}
        if body.get("ServiceCode") != "AmazonEC2":
            return 400, {"__type": "InvalidParameterException", "Message": "ServiceCode must be AmazonEC2 here"}
        matching = [d for d in self.documents if _matches(d, body.get("Filters", []))]
        size = self.page_size or max(1, len(matching))
        start = int(body["NextToken"].removeprefix("page-")) if body.get("NextToken") else 0
        page = matching[start : start + size]
        reply: dict[str, Any] = {
            "FormatVersion": body.get("FormatVersion", "aws_v1"),
            "PriceList": [json.dumps(d) for d in page],
        }
        if start + size < len(matching):
            reply["NextToken"] = f"page-{start + size}"
        return 200, reply

    def _handler_class(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    status, reply = 400, {"__type": "SerializationException", "Message": "bad JSON"}
                else:
                    status, reply = fake.answer(self.headers.get("X-Amz-Target"), body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep pytest output quiet
                pass

        return Handler


def _matches(document: dict[str, Any], filters: list[dict[str, str]]) -> bool:
    attributes = document.get("product", {}).get("attributes", {})
    return all(not (f.get("Type") == "TERM_MATCH" and attributes.get(f["Field"]) != f["Value"]) for f in filters)


OFFLINE_RETRIEVED_ON = "2026-11-01"  # the date the shipped snapshot was built with


@pytest.fixture(scope="session")
def real_offline_snapshot(real_price_csv):
    """The snapshot `planner pricing build` makes from the real table (moto's bundled specs)."""
    import datetime as dt

    from planner.catalog.sources import offline_snapshot

    return offline_snapshot(real_price_csv, dt.date.fromisoformat(OFFLINE_RETRIEVED_ON))
