"""The FastAPI application: `planner`'s answers over HTTP (``uvicorn api.app:app`` / ``planner serve``).

Request and response bodies are the planner's own models (PlanRequest -> Recommendation,
EstimateRequest -> Estimate, InstanceType, DatasetProfile), serialized with ``model_dump_json``:
fixed field order, so the same request on the same snapshot and day gives the same bytes. Every
snapshot-dependent answer names its snapshot (``snapshot`` in the body, ``X-Snapshot-Sha256``).

The price snapshot is the shipped one, or the file named by MEMORYBRIDGE_SNAPSHOT (as for the CLI).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path as FilePath
from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI, Path, Query
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field
from pydantic_core import PydanticSerializationError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import errors
from api.cache import ResponseCache
from api.errors import error_responses
from contracts.plan import Arch, PlanRequest, Recommendation, SnapshotInfo
from contracts.profile import DatasetProfile
from foundation.errors import MemoryBridgeError, UsageError
from planner.catalog.models import DataTransferPrices, InstanceType, SnapshotMeta, VolumeType
from planner.catalog.selection import MAX_LISTED_MEMORY_GIB, InstanceFilter, select_instances
from planner.catalog.snapshot import Catalog, load_catalog
from planner.datasets.builtin import BUILTIN, builtin_profile
from planner.solver.estimate import Estimate, EstimateRequest, estimate
from planner.solver.recommend import recommend

SNAPSHOT_ENV = "MEMORYBRIDGE_SNAPSHOT"
MAX_BODY_BYTES = 256 * 1024  # an inline profile with two 1000-point curves is ~60 KB
MAX_PAGE = 500
SNAPSHOT_HEADER = "X-Snapshot-Sha256"
# The cost explorer page: static files shipped inside the package, so it works offline and from a wheel.
WEB_DIR = FilePath(__file__).resolve().parent / "web"

# Recommendations only: an estimate prices one cluster and is cheap to recompute.
recommendation_cache = ResponseCache()
# A full-catalog recommendation holds ~120 MB of numpy arrays while it runs: at most this many run
# at once (more would not finish sooner on these cores); the rest wait in their worker threads.
recommendation_slots = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))


def current_catalog() -> Catalog:
    """The snapshot every answer uses (load_catalog caches it; a broken file raises SnapshotError -> 503)."""
    return load_catalog(os.environ.get(SNAPSHOT_ENV) or None)


@asynccontextmanager
async def lifespan(_: FastAPI):
    # Load the snapshot and build its numpy columns before the first request, not during it.
    try:
        current_catalog().columns  # noqa: B018 - cached_property, computed for its side effect
    except MemoryBridgeError:
        pass  # requests answer 503 with the reason; the server itself stays up for /healthz
    yield


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, by Content-Length and while reading.

    The body is buffered (it is small by construction) and replayed to the app, so a client that
    lies about Content-Length or streams chunks is cut off at the limit, not after.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        response = errors.error_json(
            413, f"request body over the {self.max_bytes // 1024} KiB limit", headers={"Connection": "close"}
        )
        await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


try:
    _VERSION = version("memorybridge")
except PackageNotFoundError:  # running from a checkout that was never installed
    _VERSION = "0.0.0"

# FastAPIOffline is FastAPI whose /docs page (Swagger UI) loads its script and styles from files
# shipped in the fastapi-offline package, not from a CDN: the API's documentation works where
# `planner serve` has no internet, as the cost explorer does. No /redoc: ReDoc's bundle fetches its
# logo from Redocly's site whatever it is told.
app = FastAPIOffline(
    redoc_url=None,
    title="memorybridge planner API",
    version=_VERSION,
    description="Cost estimates and cluster recommendations for GNN training on AWS: the answers of the "
    "`planner` CLI over HTTP, in the same schema as its `--json` output and plan files.",
    lifespan=lifespan,
)
app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
errors.install(app)


def _plain_tuples(node) -> None:
    """Spell homogeneous fixed-length tuples (a cache-curve point) as ``items`` plus min/max length.

    pydantic writes ``tuple[float, float]`` as Draft 2020-12 ``prefixItems``; that is valid
    OpenAPI 3.1, but many tools (OpenAPI 3.0 generators, schemathesis 4.32's response validator)
    mis-read it. With both lengths fixed and every position the same schema, this is equivalent.
    """
    if isinstance(node, dict):
        prefix = node.get("prefixItems")
        if (
            isinstance(prefix, list)
            and prefix
            and "items" not in node
            and all(p == prefix[0] for p in prefix)
            and node.get("minItems") == node.get("maxItems") == len(prefix)
        ):
            node["items"] = node.pop("prefixItems")[0]
        for value in node.values():
            _plain_tuples(value)
    elif isinstance(node, list):
        for value in node:
            _plain_tuples(value)


_fastapi_openapi = app.openapi


def _openapi() -> dict[str, Any]:
    """FastAPI's document with tuples as plain arrays (rewritten once: FastAPI caches the document)."""
    if app.openapi_schema is None:
        _plain_tuples(_fastapi_openapi())
    return _fastapi_openapi()


app.openapi = _openapi  # type: ignore[method-assign]  # FastAPI's documented way to change the document


# ---------------------------------------------------------------------------------------- models


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    snapshot: SnapshotInfo = Field(description="the snapshot in use and its age in days")


class InstancePage(BaseModel):
    """One page of instance types, in snapshot order."""

    items: list[InstanceType]
    total: int = Field(description="instance types matching the filters, over all pages")
    offset: int
    limit: int
    snapshot: SnapshotInfo


class Family(BaseModel):
    """An instance family with at least one priced type: what the family filters can name."""

    name: str
    gpu: bool = Field(description="GPU family (a learner); GPU-less families are memory machines")
    arch: Arch
    types: int = Field(description="priced instance types in the family")
    min_memory_gib: float
    max_memory_gib: float


class Pricing(BaseModel):
    """The snapshot's provenance (as `planner pricing show --json`)."""

    meta: SnapshotMeta
    info: SnapshotInfo
    volumes: list[VolumeType]
    transfer: DataTransferPrices = Field(description="data transfer per GB, by where the machines are")


# ------------------------------------------------------------------------------------- responses

SNAPSHOT_HEADER_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "headers": {
            SNAPSHOT_HEADER: {
                "description": "sha256 of the price snapshot the answer was computed from",
                "schema": {"type": "string"},
            }
        }
    }
}


def _json(model: BaseModel, catalog: Catalog | None = None) -> Response:
    return _bytes(model.model_dump_json().encode(), catalog)


def _bytes(body: bytes, catalog: Catalog | None = None) -> Response:
    headers = {SNAPSHOT_HEADER: catalog.sha256} if catalog is not None else None
    return Response(body, media_type="application/json", headers=headers)


def _canonical(request: BaseModel) -> str:
    """The request as canonical JSON (the cache key); text JSON cannot carry is refused with 422.

    json.loads accepts a lone UTF-16 surrogate escape (``"\\ud800"``) that no UTF-8 answer can
    echo back: refuse it here rather than fail while writing the response.
    """
    try:
        return request.model_dump_json()
    except PydanticSerializationError as exc:
        raise UsageError(f"the request holds text that is not valid Unicode ({exc})") from None


async def _cached(key: tuple, compute: Callable[[], bytes]) -> bytes:
    """The cached bytes for ``key``, else ``compute()`` in the threadpool (CPU-bound numpy work:
    off the event loop, so health checks and cache hits stay fast while it runs)."""
    body = recommendation_cache.get(key)
    if body is None:
        body = await run_in_threadpool(compute)
        recommendation_cache.put(key, body)
    return body


# Request examples for the document (and the first requests schemathesis sends).
PLAN_EXAMPLES = [
    {"dataset": "papers100M", "constraints": {"budget_usd": 50}},
    {
        "dataset": "mag240m",
        "workload": {"epochs": 20, "fanouts": [10, 5]},
        "constraints": {"deadline_hours": 12},
        "filters": {"gpu_families": ["g5", "g6"], "max_memory_nodes": 2},
        "spot": True,
        "top": 3,
    },
    {
        "dataset": "papers100M",
        "workload": {"learner_cache": 32, "wire_dtype": "float16"},
        "filters": {"max_memory_gib": 64, "volume_mbps": 125, "volume_iops": 3000},
    },
    {"dataset": "papers100M", "method": "retexo", "full_graph": {"gnn": "sage", "workers": 4, "workers_in": "regions"}},
]
ESTIMATE_EXAMPLES = [
    {"dataset": "papers100M", "learner": "g4dn.xlarge", "memory": "r8g.2xlarge", "memory_count": 2},
    {
        "dataset": "papers100M",
        "learner": "g6.4xlarge",
        "memory": "c7g.4xlarge",
        "workload": {"learner_cache": "auto", "wire_dtype": "auto"},
    },
    {"dataset": "products", "learner": "g5.xlarge", "workload": {"epochs": 50}},
]


# ---------------------------------------------------------------------------------------- routes


@app.get("/healthz", response_model=Health, responses={**SNAPSHOT_HEADER_DOC, **error_responses(503)}, tags=["service"])
async def healthz() -> Response:
    """Liveness plus the snapshot in use and its age (503 when the snapshot cannot be loaded)."""
    catalog = current_catalog()
    return _json(Health(snapshot=catalog.info()), catalog)


@app.get(
    "/v1/instances",
    response_model=InstancePage,
    tags=["catalog"],
    responses={**SNAPSHOT_HEADER_DOC, **error_responses(404, 422, 503)},
)
async def list_instances(
    gpu: Annotated[bool | None, Query(description="true: only GPU types; false: only GPU-less types")] = None,
    family: Annotated[
        list[str] | None, Query(max_length=50, description="only these families (repeat the parameter)")
    ] = None,
    min_memory_gib: Annotated[
        float | None, Query(ge=0, le=MAX_LISTED_MEMORY_GIB, description="at least this much RAM")
    ] = None,
    arch: Annotated[Arch | None, Query(description="x86_64 or arm64")] = None,
    include_unpriced: Annotated[bool, Query(description="also types without a price (never recommended)")] = False,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> Response:
    """Instance types of the snapshot with specs and prices (as `planner instances`), paginated."""
    catalog = current_catalog()
    criteria = InstanceFilter(
        gpu=gpu, families=family, min_memory_gib=min_memory_gib, arch=arch, include_unpriced=include_unpriced
    )
    chosen = select_instances(catalog, criteria)
    page = InstancePage(
        items=chosen[offset : offset + limit], total=len(chosen), offset=offset, limit=limit, snapshot=catalog.info()
    )
    return _json(page, catalog)


@app.get(
    "/v1/instances/{instance_type}",
    response_model=InstanceType,
    tags=["catalog"],
    responses={**SNAPSHOT_HEADER_DOC, **error_responses(404, 422, 503)},
)
async def get_instance(instance_type: Annotated[str, Path(max_length=100, examples=["g4dn.xlarge"])]) -> Response:
    """One instance type (priced or not); unknown names answer 404 with close matches."""
    catalog = current_catalog()
    return _json(catalog.instance(instance_type), catalog)


@app.get(
    "/v1/families",
    response_model=list[Family],
    tags=["catalog"],
    responses={**SNAPSHOT_HEADER_DOC, **error_responses(503)},
)
async def list_families() -> Response:
    """Families with priced types, by name: what ``filters.gpu_families`` and ``memory_families`` accept."""
    catalog = current_catalog()
    members: dict[str, list[InstanceType]] = {}
    for instance in catalog.snapshot.instances:
        if instance.price_provenance:
            members.setdefault(instance.family, []).append(instance)
    families = [
        Family(
            name=name,
            gpu=types[0].has_gpu,
            arch=types[0].arch,
            types=len(types),
            min_memory_gib=min(t.memory_gib for t in types),
            max_memory_gib=max(t.memory_gib for t in types),
        )
        for name, types in sorted(members.items())
    ]
    body = b"[" + b",".join(f.model_dump_json().encode() for f in families) + b"]"
    return _bytes(body, catalog)


@app.get("/v1/datasets", response_model=list[DatasetProfile], tags=["datasets"])
async def list_datasets() -> Response:
    """The built-in dataset profiles (as `planner datasets --json`)."""
    body = b"[" + b",".join(p.model_dump_json().encode() for p in BUILTIN.values()) + b"]"
    return _bytes(body)


@app.get("/v1/datasets/{name}", response_model=DatasetProfile, tags=["datasets"], responses=error_responses(404, 422))
async def get_dataset(name: Annotated[str, Path(max_length=200, examples=["papers100M"])]) -> Response:
    """One built-in dataset profile (name case-insensitive); unknown names answer 404 with close matches."""
    return _json(builtin_profile(name))


@app.post(
    "/v1/estimates",
    response_model=Estimate,
    tags=["planning"],
    responses={**SNAPSHOT_HEADER_DOC, **error_responses(404, 413, 422, 503)},
)
async def post_estimate(request: Annotated[EstimateRequest, Body(examples=ESTIMATE_EXAMPLES)]) -> Response:
    """Time and cost of one given cluster (learner, memory machines, volume) with the stage breakdown.

    An infeasible cluster (e.g. the graph does not fit its RAM) is a 200 with ``feasible: false``
    and why: ``unrunnable`` (a code and its description) and ``reason`` (the description).
    """
    catalog, today = current_catalog(), dt.date.today()
    _canonical(request)  # refuses text the answer could not echo back
    body = await run_in_threadpool(lambda: estimate(request, catalog=catalog, today=today).model_dump_json().encode())
    return _bytes(body, catalog)


@app.post(
    "/v1/recommendations",
    response_model=Recommendation,
    tags=["planning"],
    responses={**SNAPSHOT_HEADER_DOC, **error_responses(404, 413, 422, 503)},
)
async def post_recommendation(request: Annotated[PlanRequest, Body(examples=PLAN_EXAMPLES)]) -> Response:
    """The inputs of `planner recommend`: ranked plans, the cost/time frontier, the best single machine.

    An unmeetable budget is a 200 with ``feasible: false``, ``cheapest_feasible_usd`` and
    ``infeasibility``: its code, the binding constraint as a request field path
    (``constraints.budget_usd``), advice on each field to change with the value that would fit,
    and ``detail``, that advice in words naming the same field paths. Answers are cached by the
    canonical request (same request, same bytes).
    """
    catalog, today = current_catalog(), dt.date.today()
    key = ("recommendation", catalog.sha256, today.isoformat(), _canonical(request))

    def compute() -> bytes:
        with recommendation_slots:
            return recommend(request, catalog=catalog, today=today).model_dump_json().encode()

    return _bytes(await _cached(key, compute), catalog)


@app.get(
    "/v1/pricing", response_model=Pricing, tags=["catalog"], responses={**SNAPSHOT_HEADER_DOC, **error_responses(503)}
)
async def pricing() -> Response:
    """The snapshot's sources, date, age, volume and data transfer prices (as `planner pricing show --json`)."""
    catalog = current_catalog()
    pricing = Pricing(
        meta=catalog.snapshot.meta, info=catalog.info(), volumes=catalog.snapshot.volumes, transfer=catalog.transfer
    )
    return _json(pricing, catalog)


# ------------------------------------------------------------------------------------ the page


@app.get("/", include_in_schema=False)
async def explorer() -> FileResponse:
    """The cost explorer: a page over this API (its script asks the routes above)."""
    return FileResponse(WEB_DIR / "index.html", media_type="text/html")


app.mount("/static", StaticFiles(directory=WEB_DIR / "static"), name="static")
