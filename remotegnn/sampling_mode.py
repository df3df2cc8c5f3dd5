"""Where a loader's batches are sampled: on the memory machines (the default) or on the learner.

Memory sampling sends every batch's ids, edges and labels over the link with its feature rows.
When the learner's RAM holds the graph's structure, the learner can sample its own batches
(``sampling="learner"``): then only the ids of the rows it lacks go to the memory machines, and
only those rows come back. ``remotegnn launch --sampling learner`` chooses it for every loader of
the job's learners through ``SAMPLING_ENV``; a loader's own ``sampling=`` argument wins.
"""

from __future__ import annotations

import os
from typing import Final, Literal

from foundation.errors import UsageError

SamplingMode = Literal["memory", "learner"]
SAMPLING_ENV: Final = "REMOTEGNN_SAMPLING"
"""Set by ``remotegnn launch --sampling`` for the learners: their loaders' default mode."""
DEFAULT_SAMPLING: Final[SamplingMode] = "memory"


def sampling_mode(value: str | None) -> SamplingMode:
    """The mode a loader's ``sampling`` argument asks for; None: the launch's, else memory."""
    if value is None:
        value = os.environ.get(SAMPLING_ENV, DEFAULT_SAMPLING)
        named = f"{SAMPLING_ENV}={value!r} (remotegnn launch --sampling)"
    else:
        named = f"sampling={value!r}"
    if value == "memory":
        return "memory"
    if value == "learner":
        return "learner"
    raise UsageError(
        f"{named}: choose 'memory' (the memory machines sample and send whole batches) or 'learner' "
        "(the learner samples from its own copy of the structure and asks only for the rows it lacks)"
    )
