"""What learner and memory ranks say to each other besides batches: pydantic messages carried as
UTF-8 JSON in CONTROL frames (plus raw arrays such as the seed ids), never pickle.

Learner -> memory rank (tag ``CONTROL``): Describe, Open, Epoch, Credit, Close, Bye.
Memory rank -> learner (the session's ``REPLY`` tag): Described, Opened and its LearnerRows (the
rank's share of the learner cache), the epoch's END stats, or ERROR. Batches travel on the
session's ``DATA`` tag as BATCH frames, blueprints between memory ranks on its ``BLUEPRINT`` tag
(or, when the learner samples, from the learner to every memory rank: a BLUEPRINT frame holding
only ``n_id``, the ids of the rows that rank is to send).
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, Field, TypeAdapter

from contracts.shards import ShardLayoutName
from foundation.models import StrictModel
from remotegnn import wire
from remotegnn.sampling_mode import SamplingMode
from remotegnn.server.startup import Tier

BASE_TAG = 7100  # clear of the small tags user code tends to use on COMM_WORLD
CONTROL_TAG = BASE_TAG
MAX_SESSIONS = 4096


class Describe(StrictModel):
    """Which dataset a session will read and what the learner needs to know about it."""

    op: Literal["describe"] = "describe"
    session: int
    dataset: str | None = Field(description="a path on the memory machines; None = the one `serve` was given")


class Open(StrictModel):
    """Start a session's pipeline. Arrays ``input_nodes``/``input_ids`` travel with it."""

    op: Literal["open"] = "open"
    session: int
    dataset: str | None
    options: dict = Field(description="PipelineOptions fields the learner set explicitly")
    learner: int = Field(ge=0, description="this learner's index among the learner ranks")
    learners: int = Field(ge=1)
    sampling: SamplingMode = Field(
        "memory",
        description="who samples the batches: the memory ranks, or the learner, which then sends each rank "
        "the ids of its rows of every batch on the BLUEPRINT tag",
    )


class Epoch(StrictModel):
    """Begin ``epoch`` at batch ``first`` (0, or where a resumed epoch left off); the memory rank
    may send batches [first, credit)."""

    op: Literal["epoch"] = "epoch"
    session: int
    epoch: int
    credit: int
    first: int = Field(0, ge=0)


class Credit(StrictModel):
    """The learner has room for batches up to (not including) ``upto``."""

    op: Literal["credit"] = "credit"
    session: int
    upto: int


class Close(StrictModel):
    op: Literal["close"] = "close"
    session: int


class Bye(StrictModel):
    """The learner process is exiting: close all its sessions; the server stops after the last."""

    op: Literal["bye"] = "bye"
    session: int = -1


Request = Annotated[Describe | Open | Epoch | Credit | Close | Bye, Field(discriminator="op")]
REQUEST = TypeAdapter(Request)


USER_IDS = "user_ids"
"""The array a reordered dataset's description carries: the user's id of each stored node."""


class Described(StrictModel):
    op: Literal["described"] = "described"
    meta: dict
    path: str = Field(description="the dataset's directory on the memory machines (a learner that samples opens it)")
    splits: list[str] = Field(
        description="split names; their user node ids follow as arrays named split_<name> "
        f"(and a reordered dataset's {USER_IDS})"
    )


class Opened(StrictModel):
    op: Literal["opened"] = "opened"
    num_batches: int
    slot_bytes: int = Field(description="the largest frame this rank sends (the learner's receive buffer size)")
    caches: dict = Field(description="the session's CacheReport: what the learner's and this rank's caches hold")
    learner_nodes: int = Field(ge=0, description="rows the learner cache holds in RAM, over all memory ranks")
    learner_digest: int = Field(description="CRC-32 of the learner cache's sorted node ids (ranks must agree)")
    device_nodes: int = Field(0, ge=0, description="rows the learner holds on its device, over all memory ranks")
    device_digest: int = Field(0, description="CRC-32 of the device tier's sorted node ids (ranks must agree)")
    fill_frames: int = Field(ge=0, description="LearnerRows frames that follow with this rank's share (both tiers)")
    layout: ShardLayoutName = Field(description="how the memory ranks deal rows (contracts.shards)")
    block_rows: int = Field(ge=1, description="consecutive rows dealt to one rank at a time")


class LearnerRows(StrictModel):
    """Part ``part`` of a memory rank's share of the learner cache: arrays ``nodes`` and ``rows``."""

    op: Literal["learner_rows"] = "learner_rows"
    part: int = Field(ge=0)
    tier: Tier = Field("ram", description="which of the learner's tiers the rows are for")


def pack(
    message: BaseModel, arrays: dict[str, np.ndarray] | None = None, kind: wire.Kind = wire.Kind.CONTROL, epoch: int = 0
) -> np.ndarray:
    """A CONTROL (or END/ERROR) frame holding ``message`` as JSON and ``arrays``."""
    tensors = {"json": wire.text_tensor(message.model_dump_json())}
    tensors.update(arrays or {})
    specs = [wire.spec_of(name, np.asarray(value)) for name, value in tensors.items()]
    buf = np.empty(wire.frame_size(specs), dtype=np.uint8)
    wire.encode(buf, kind, epoch, 0, 0, tensors)
    return buf


def text_frame(kind: wire.Kind, text: str, epoch: int = 0) -> np.ndarray:
    """An END (stats JSON) or ERROR (message) frame."""
    tensor = wire.text_tensor(text)
    buf = np.empty(wire.frame_size([wire.spec_of("text", tensor)]), dtype=np.uint8)
    wire.encode(buf, kind, epoch, 0, 0, {"text": tensor})
    return buf


def unpack_request(buf: np.ndarray) -> tuple[Describe | Open | Epoch | Credit | Close | Bye, wire.Frame]:
    """Validate a learner's request (a FrameError or pydantic ValidationError if malformed)."""
    frame = wire.decode(buf)
    if frame.kind != wire.Kind.CONTROL:
        raise wire.FrameError(f"expected a CONTROL frame, got {frame.kind.name}")
    return REQUEST.validate_python(json.loads(frame.text("json"))), frame


def session_tag(learner: int, session: int, channel: int) -> int:
    """The tag of one session's ``channel`` (0 data, 1 reply, 2 blueprint) between two ranks."""
    return BASE_TAG + 8 + ((learner * MAX_SESSIONS + session) * 4 + channel)


DATA, REPLY, BLUEPRINT = 0, 1, 2
