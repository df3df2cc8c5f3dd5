"""Where a loader is in its epochs, as data: what ``state_dict()`` returns and ``load_state_dict()`` takes.

The convention is torchdata's ``StatefulDataLoader``'s: a plain dict (numbers and strings, so it
goes into JSON or a ``torch.save`` checkpoint and loads back with ``weights_only=True``), taken
between batches, that lets a new loader yield exactly the batches the old one had not yet yielded.
Three things fix those batches: the seed (every epoch's order and every batch's draws depend only
on the seed, the epoch and the batch's index), the epoch, and how many of its batches were
yielded. The rest of the state describes the loader that saved it, so a state is never applied to
a loader that would yield other batches: a mismatch is refused, naming what differs.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, Literal

import numpy as np
from pydantic import Field, ValidationError

from foundation.errors import UsageError, format_validation_error
from foundation.models import StrictModel

STATE_KIND: Final = "memorybridge.loader-state"
STATE_VERSION: Final = 1
FINGERPRINT_ITEMS = 1 << 20
"""The items a fingerprint hashes at most (evenly spaced): enough to tell two seed sets apart, cheap
on the billions of supervision edges a link loader may have."""


class LoaderState(StrictModel):
    """A loader's position: the epoch its next batch belongs to and how many of that epoch's
    batches it has yielded, and what it must match to resume from there."""

    kind: Literal["memorybridge.loader-state"] = STATE_KIND
    version: Literal[1] = STATE_VERSION
    loader: Literal["node", "link"] = Field(description="DistributedGraphLoader or DistributedLinkLoader")
    epoch: int = Field(ge=0, description="the epoch the next batch belongs to")
    batches_yielded: int = Field(ge=0, description="of that epoch's batches, how many were yielded already")
    num_batches: int = Field(ge=0, description="batches in each of this learner's epochs")
    seed: int = Field(ge=0, description="fixes every epoch's order and every batch's draws")
    shuffle: bool
    batch_size: int = Field(gt=0)
    drop_last: bool
    num_neighbors: list[int]
    learner: int = Field(ge=0, description="this learner's index among the learner ranks")
    learners: int = Field(ge=1)
    items: int = Field(ge=0, description="input nodes (a link loader: supervision edges)")
    items_sha256: str = Field(description="fingerprint of the input items (see FINGERPRINT_ITEMS)")

    @classmethod
    def parse(cls, state: Any) -> LoaderState:
        """A state as ``load_state_dict`` receives it, checked at the boundary."""
        if isinstance(state, LoaderState):
            return state
        try:
            return cls.model_validate(state)
        except ValidationError as exc:
            raise UsageError(f"load_state_dict: not a loader state: {format_validation_error(exc)}") from None

    def check_matches(self, mine: LoaderState) -> None:
        """Refuse a state saved by a loader that yields other batches than ``mine``."""
        fixed = mine.model_dump(exclude={"epoch", "batches_yielded"})
        saved = self.model_dump(exclude={"epoch", "batches_yielded"})
        differ = [
            f"{name} (saved {saved[name]!r}, this loader {fixed[name]!r})"
            for name in fixed
            if saved[name] != fixed[name]
        ]
        if differ:
            raise UsageError(
                "load_state_dict: the state was saved by a loader that yields other batches; build this one as that "
                f"one was (the same arguments, seed= included, and learner ranks): {', '.join(differ)}"
            )
        if self.batches_yielded > self.num_batches:
            raise UsageError(
                f"load_state_dict: batches_yielded {self.batches_yielded} is more than the epoch's {self.num_batches}"
            )

    def next_position(self) -> tuple[int, int]:
        """(epoch, first batch) the next epoch a restored loader runs starts at: a state saved after
        an epoch's last batch resumes at the next epoch's first."""
        if self.batches_yielded >= self.num_batches:
            return self.epoch + 1, 0
        return self.epoch, self.batches_yielded


def items_fingerprint(arrays: dict[str, np.ndarray]) -> str:
    """sha256 of up to FINGERPRINT_ITEMS evenly spaced items of each of a seed source's arrays
    (``seeds_as_arrays``: items along the last axis)."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.asarray(arrays[name])
        step = max(1, array.shape[-1] // FINGERPRINT_ITEMS) if array.ndim else 1
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(array[..., ::step]).tobytes())
    return digest.hexdigest()
