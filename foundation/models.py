"""The bases of every boundary model: an unknown field is an error, never ignored.

Every model a request, a file, a message or a command line is read into inherits
:class:`StrictModel` (frozen) or, if it is counted into while a run goes,
:class:`StrictMutableModel`; none spells ``extra`` or ``frozen=True`` itself.

The exceptions ignore unknown fields, say so in their own ``model_config``, and read a part of
a larger document: a calibration run keeps the cache and process counts of the memory server's
full options (``contracts.runs.ServerConfig``) and what calibration needs of each epoch's full
``PipelineStats`` (``contracts.runs.JobEpoch``, ``contracts.stats.EpochCounters``), and the
spot advisor's file (``planner.catalog.interruptions``) has more in it than the bands the
planner reads.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Frozen, and unknown fields are errors: a typo in a request or a file is never ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class StrictMutableModel(BaseModel):
    """Unknown fields are errors, as in :class:`StrictModel`, but fields may be assigned.

    For counters a run adds to while it goes, one datagram or one batch at a time, where a
    frozen copy per increment would cost more than the work counted: a UDP rank's
    ``fullgraph.exchange.ledger.WireStats`` and the learner feed's
    ``contracts.stats.FeedCounters``. What is made whole, or read whole from a file or a
    message, is a :class:`StrictModel`.
    """

    model_config = ConfigDict(extra="forbid")
