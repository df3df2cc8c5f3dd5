"""The base of every boundary model: frozen, and an unknown field is an error, never ignored."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Frozen, and unknown fields are errors: a typo in a request or a file is never ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid")
