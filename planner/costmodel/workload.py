"""What the user trains: sampling fanouts, batch size, model width, epochs and cache policy."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from planner.datasets.profile import CachePolicy


class Workload(BaseModel):
    """A GraphSAGE-style mini-batch training job (defaults: the paper's and PyG's usual setting)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fanouts: list[int] = Field(
        default_factory=lambda: [15, 10, 5],
        min_length=1,
        max_length=6,
        description="neighbours sampled per hop; -1 = all",
    )
    batch_size: int = Field(1024, gt=0, le=1_000_000)
    hidden_dim: int = Field(256, gt=0, le=65_536)
    epochs: int = Field(10, gt=0, le=100_000)
    cache_policy: CachePolicy = "degree"

    @field_validator("fanouts")
    @classmethod
    def _fanouts_valid(cls, fanouts: list[int]) -> list[int]:
        if any(f == 0 or f < -1 or f > 10_000 for f in fanouts):
            raise ValueError("each fanout is -1 (all neighbours) or between 1 and 10000")
        return fanouts
