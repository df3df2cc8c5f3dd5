"""Every error the API returns has one shape, ErrorResponse, and one declared status.

Status codes (also in the OpenAPI document of every route):
- 404: an unknown dataset, instance type or family (NotFoundError), with close-match suggestions;
- 413: a request body over the size limit (see :mod:`api.app`);
- 422: a request that is malformed (pydantic validation: ``errors`` gives each field's path and
  the reason) or well-formed but unusable (other UsageError/MemoryBridgeError, e.g. a learner without
  a GPU). 422 rather than 400 so both kinds of bad input share the status FastAPI uses for one;
- 503: the server's own price snapshot is missing or broken (SnapshotError): not the caller's fault.
An infeasible budget is not an error: it is a 200 with ``feasible: false`` and the reason.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from foundation.errors import InputFileError, MemoryBridgeError, NotFoundError
from planner.errors import PricingSourceError, SnapshotError

MAX_FIELD_ERRORS = 20  # a body with thousands of bad fields gets a bounded answer


class FieldError(BaseModel):
    loc: list[str | int] = Field(description="path of the offending field, e.g. [body, constraints, budget_usd]")
    msg: str = Field(description="what is wrong with it")
    type: str = Field(description="pydantic's error type, e.g. greater_than")


class ErrorResponse(BaseModel):
    detail: str = Field(description="what went wrong and how to fix it")
    suggestions: list[str] = Field(default_factory=list, description="close matches for an unknown name")
    errors: list[FieldError] = Field(default_factory=list, description="per-field validation errors (422)")


ERROR_DESCRIPTIONS = {
    404: "unknown dataset, instance type or family; `suggestions` lists close matches",
    413: "request body over the size limit",
    422: "invalid request: `errors` names each field and the reason",
    503: "the server's price snapshot is missing or invalid",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry declaring these error statuses with the ErrorResponse model."""
    return {code: {"model": ErrorResponse, "description": ERROR_DESCRIPTIONS[code]} for code in codes}


def error_json(
    status: int,
    detail: str,
    *,
    suggestions: list[str] | None = None,
    errors: list[FieldError] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    body = ErrorResponse(detail=detail, suggestions=suggestions or [], errors=errors or [])
    return Response(body.model_dump_json(), status_code=status, media_type="application/json", headers=headers)


def status_for(exc: MemoryBridgeError) -> int:
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, (SnapshotError, InputFileError, PricingSourceError)):
        return 503  # server-side data (snapshot, coefficients), never something the caller sent
    return 422


def _loc_text(loc: list[str | int]) -> str:
    return ".".join(str(part) for part in loc) or "request"


async def project_error(_: Request, exc: MemoryBridgeError) -> Response:
    suggestions = list(exc.suggestions) if isinstance(exc, NotFoundError) else []
    return error_json(status_for(exc), str(exc), suggestions=suggestions)


async def validation_error(_: Request, exc: RequestValidationError) -> Response:
    # Only loc, msg and type: pydantic's ``input`` and ``ctx`` may echo megabytes or hold objects.
    raw = exc.errors()
    errors = [
        FieldError(
            loc=[p if isinstance(p, int) else str(p) for p in e.get("loc", ())],
            msg=str(e.get("msg", "")),
            type=str(e.get("type", "")),
        )
        for e in raw[:MAX_FIELD_ERRORS]
    ]
    detail = "; ".join(f"{_loc_text(e.loc)}: {e.msg}" for e in errors[:3])
    if len(raw) > 3:
        detail += f"; and {len(raw) - 3} more"
    return error_json(422, detail or "invalid request", errors=errors)


async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
    """Starlette's own errors (unknown path, wrong method) in the same shape as ours.

    FastAPI's one 400 is a body it cannot decode (not UTF-8): a malformed request like any other,
    so it gets the 422 that malformed JSON gets.
    """
    headers = dict(exc.headers) if exc.headers else None
    status = 422 if exc.status_code == 400 else exc.status_code
    return error_json(status, str(exc.detail), headers=headers)


def install(app: FastAPI) -> None:
    # Starlette types every handler as taking Exception; each here is registered for its own class.
    app.add_exception_handler(MemoryBridgeError, project_error)  # type: ignore[arg-type]  # see above
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]  # see above
    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]  # see above
