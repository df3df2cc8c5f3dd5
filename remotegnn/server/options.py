"""The memory server's options (pydantic: they cross the CLI, the loader and the MPI job).

What an epoch cost, stage by stage (``PipelineStats``), is a shared format: :mod:`contracts.stats`."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, field_validator

from contracts.workload import DEFAULT_BATCH_SIZE, DEFAULT_FANOUTS
from foundation.models import StrictModel
from remotegnn.precision import WireDtype
from remotegnn.sampling.links import NegativeSampling
from remotegnn.sampling.sampler import check_fanouts


def _cpus() -> int:
    return os.cpu_count() or 1


class ServerOptions(StrictModel):
    """How a memory server builds batches: its processes, its ring and its RAM cache. The
    loader's ``server=`` argument; ``remotegnn serve`` sets the same fields from its flags.
    Defaults split the vCPUs between sampling (the heavier stage) and feature loading; the ring
    depth bounds memory and in-flight batches (backpressure)."""

    batch_creators: int = Field(
        default_factory=lambda: max(1, _cpus() // 2), gt=0, description="sampling processes (half the vCPUs)"
    )
    vector_loaders: int = Field(
        default_factory=lambda: max(1, _cpus() // 4), gt=0, description="feature-gathering processes (a quarter)"
    )
    ring_slots: int = Field(4, ge=2, le=64, description="batches in flight between the stages and the learner")
    cache_bytes: int = Field(0, ge=0, description="RAM for hot feature rows on each memory rank")
    cache_policy: Literal["degree", "presample", "auto", "none"] = Field(
        "degree", description="which rows that cache holds: highest in-degree, most sampled in a trial epoch, or auto"
    )
    checksum: Literal["full", "header"] = Field(
        "header",
        description="what batch frames' CRC-32 covers: the header only (default), or the payload "
        "too; MPI sends the ring's frames as they are, so this applies to them as well",
    )


class PipelineOptions(ServerOptions):
    """Everything a pipeline needs: the server's options and the loader's sampling choices."""

    num_neighbors: list[int] = Field(default_factory=lambda: list(DEFAULT_FANOUTS))
    batch_size: int = Field(DEFAULT_BATCH_SIZE, gt=0)
    replace: bool = False
    disjoint: bool = Field(False, description="one tree per seed, nodes repeated across trees (PyG's disjoint)")
    weight_attr: str | None = Field(None, description="sample neighbours in proportion to this stored edge weight")
    neg_sampling: NegativeSampling | None = Field(None, description="link batches: negative examples to add")
    type_fanouts: list[list[int]] | None = Field(
        None, description="a heterogeneous graph's fanouts, [hop][edge type]; num_neighbors then bounds each hop"
    )
    edge_ids: bool = Field(
        False,
        description="send each sampled edge's id (e_id): edge attributes, bidirectional batches and "
        "heterogeneous graphs need them, and a loader asks for them with edge_ids=True",
    )
    shuffle: bool = True
    drop_last: bool = False
    seed: int = Field(0, ge=0, description="fixes the epoch permutations and the sampling draws")
    learner_cache_bytes: int = Field(0, ge=0, description="RAM for hot feature rows on the learner (never sent)")
    device_cache_bytes: int = Field(
        0, ge=0, description="the learner's device memory for the hottest rows, above learner_cache_bytes (never sent)"
    )
    learner_cache_policy: Literal["degree", "presample", "auto"] = "degree"
    wire_dtype: WireDtype = Field("float32", description="the dtype feature rows travel in (float32 is exact)")
    timeout_s: float = Field(60.0, gt=0, description="longest wait for a batch before the learner gives up")

    @field_validator("num_neighbors", mode="before")
    @classmethod
    def _fanouts(cls, value) -> list[int]:
        try:
            return check_fanouts(value).tolist()
        except Exception as exc:  # UsageError -> a pydantic error naming the field
            raise ValueError(str(exc)) from None
