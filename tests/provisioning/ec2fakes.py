"""EC2 answers made in the test, delivered through botocore's ``before-send`` event.

A ``before-send`` handler that returns an :class:`~botocore.awsrequest.AWSResponse` replaces the
HTTP exchange only: botocore's real parser turns the XML into a ClientError (or a result), and the
project's real retry, failover and rollback code handles it. Everything else goes to moto.

* :func:`ec2_error` builds an EC2 error response (``InsufficientInstanceCapacity``,
  ``RequestLimitExceeded``...), :func:`html_page` what a server that is not EC2 answers.
* :class:`Faults` registers per-operation rules that decide from the request's parameters whether
  to fail it, and counts calls; a rule can also let the request do its work first and then fail
  it (a response lost on the way back).
* :class:`PlacementGroups` answers Create/Describe/DeletePlacementGroup(s), which moto 5.2.5 does
  not implement (it answers them with HTTP 500), statefully, in EC2's XML, and rejects a
  RunInstances that names a placement group that does not exist, as EC2 does.
"""

from __future__ import annotations

import itertools
import urllib.request
from collections import Counter
from collections.abc import Callable
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from botocore.awsrequest import AWSResponse

NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


class _Body:
    def __init__(self, data: bytes):
        self._data = data

    def stream(self, **_):
        yield self._data


def ec2_response(status: int, xml: str, url: str = "https://ec2.amazonaws.com/") -> AWSResponse:
    return AWSResponse(url, status, {"Content-Type": "text/xml;charset=UTF-8"}, _Body(xml.encode()))


def html_page(status: int, page: bytes) -> AWSResponse:
    """What a web server that is not EC2 answers (moto's for a call it lacks): an error page."""
    return AWSResponse("http://127.0.0.1/", status, {"Content-Type": "text/html; charset=utf-8"}, _Body(page))


def ec2_error(code: str, message: str = "injected by the test", status: int = 500) -> AWSResponse:
    return ec2_response(
        status,
        f"<Response><Errors><Error><Code>{escape(code)}</Code><Message>{escape(message)}"
        f"</Message></Error></Errors><RequestID>test-request</RequestID></Response>",
    )


def params(request) -> dict[str, str]:
    """An EC2 query request's parameters (``Placement.AvailabilityZone``, ``InstanceType``...)."""
    body = request.body.decode() if isinstance(request.body, bytes) else (request.body or "")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


class Faults:
    """Per-operation fault rules; ``calls`` counts the requests each rule saw.

    One dispatcher is installed on the session's events before any client exists (clients copy the
    session's handlers when they are created); rules added later are looked up at request time.
    """

    def __init__(self, events):
        self.calls: Counter[str] = Counter()
        self._rules: dict[str, list[tuple[Callable, bool]]] = {}
        events.register("before-send.ec2", self._dispatch)

    def on(
        self, operation: str, rule: Callable[[dict[str, str]], AWSResponse | None], *, after_forward: bool = False
    ) -> None:
        """Answer ``operation`` with ``rule(params)`` when that is a response, else let it through.

        With ``after_forward`` the request first reaches moto (see :func:`forward`).
        """
        self._rules.setdefault(operation, []).append((rule, after_forward))

    def clear(self) -> None:
        self._rules.clear()

    def _dispatch(self, request, event_name: str, **_):
        operation = event_name.rsplit(".", 1)[-1]
        for rule, after_forward in self._rules.get(operation, []):
            self.calls[operation] += 1
            response = rule(params(request))
            if response is not None:
                if after_forward:
                    forward(request)
                return response
        return None


class PlacementGroups:
    """A stateful stand-in for EC2's placement-group API (see the module docstring)."""

    def __init__(self):
        self.groups: dict[str, dict] = {}
        self.launches: list[tuple[str, str]] = []  # (group name, zone) of each RunInstances
        self._ids = itertools.count(1)

    def install(self, events) -> None:
        events.register("before-send.ec2.CreatePlacementGroup", self._create)
        events.register("before-send.ec2.DescribePlacementGroups", self._describe)
        events.register("before-send.ec2.DeletePlacementGroup", self._delete)
        events.register("before-send.ec2.RunInstances", self._run_instances)

    def _item(self, name: str) -> str:
        g = self.groups[name]
        tags = "".join(f"<item><key>{escape(k)}</key><value>{escape(v)}</value></item>" for k, v in g["tags"].items())
        return (
            f"<groupName>{escape(name)}</groupName><state>available</state><strategy>{g['strategy']}</strategy>"
            f"<groupId>{g['id']}</groupId><tagSet>{tags}</tagSet>"
        )

    def _create(self, request, **_):
        p = params(request)
        name = p["GroupName"]
        if name in self.groups:
            return ec2_error("InvalidPlacementGroup.Duplicate", f"The placement group '{name}' already exists.", 400)
        tags = {
            p[k]: p[k.removesuffix("Key") + "Value"]
            for k in p
            if k.startswith("TagSpecification.1.Tag.") and k.endswith(".Key")
        }
        self.groups[name] = {"strategy": p.get("Strategy", "cluster"), "tags": tags, "id": f"pg-{next(self._ids):017x}"}
        return ec2_response(
            200,
            f'<CreatePlacementGroupResponse xmlns="{NS}"><requestId>t</requestId>'
            f"<placementGroup>{self._item(name)}</placementGroup></CreatePlacementGroupResponse>",
        )

    def _describe(self, request, **_):
        p = params(request)
        filters = {}
        for key, value in p.items():
            if key.startswith("Filter.") and key.endswith(".Name"):
                prefix = key.removesuffix("Name")
                filters[value] = {v for k, v in p.items() if k.startswith(prefix + "Value.")}

        def matches(name: str) -> bool:
            for field, values in filters.items():
                if field == "group-name":
                    actual = name
                elif field.startswith("tag:"):
                    actual = self.groups[name]["tags"].get(field.removeprefix("tag:"))
                else:
                    raise AssertionError(f"PlacementGroups does not emulate the filter {field}")
                if actual not in values:
                    return False
            return True

        items = "".join(f"<item>{self._item(n)}</item>" for n in self.groups if matches(n))
        return ec2_response(
            200,
            f'<DescribePlacementGroupsResponse xmlns="{NS}"><requestId>t</requestId>'
            f"<placementGroupSet>{items}</placementGroupSet></DescribePlacementGroupsResponse>",
        )

    def _delete(self, request, **_):
        name = params(request)["GroupName"]
        if self.groups.pop(name, None) is None:
            return ec2_error("InvalidPlacementGroup.Unknown", f"The Placement Group '{name}' is unknown.", 400)
        return ec2_response(
            200,
            f'<DeletePlacementGroupResponse xmlns="{NS}"><requestId>t</requestId>'
            "<return>true</return></DeletePlacementGroupResponse>",
        )

    def _run_instances(self, request, **_):
        p = params(request)
        group = p.get("Placement.GroupName")
        if group and group not in self.groups:
            return ec2_error("InvalidPlacementGroup.Unknown", f"The Placement Group '{group}' is unknown.", 400)
        self.launches.append((group or "", p.get("Placement.AvailabilityZone", "")))
        return None


def forward(request) -> None:
    """Send ``request`` on to its endpoint (moto) as is; the caller then answers something else.

    Models a call that did its work on the AWS side but whose response never reached the client.
    """
    body = request.body.encode() if isinstance(request.body, str) else request.body
    forwarded = urllib.request.Request(request.url, data=body, headers=dict(request.headers), method=request.method)
    with urllib.request.urlopen(forwarded, timeout=30):  # raises on an HTTP error
        pass
