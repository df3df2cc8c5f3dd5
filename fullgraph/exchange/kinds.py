"""What crosses the network in full-graph training, by kind: the ledger's keys and the messages' tags.

Every method's kinds are listed here, in one order, because a kind's position is the tag both
sides of a message agree on, and one rank's report must be readable by any master.
"""

from __future__ import annotations

from typing import Final, Literal

TrafficKind = Literal[
    # the terms of the RETEXO paper's Eq. 2 (standard training and RETEXO)
    "features",  # raw feature rows of boundary nodes (once per run)
    "representations",  # a layer's boundary rows, forward
    "representation_gradients",  # their gradients, backward (standard training only)
    "model_gradients",  # worker -> master, every round
    "weights",  # master -> worker, every round
    # every method
    "evaluation",  # rows of the no-dropout forward that scores a round (standard, SliceGCN)
    "control",  # metrics and flags: a few dozen bytes a round
    # SliceGCN
    "fused_slices",  # with feature fusion: the learner's fused columns for a slice
    "slice_outputs",  # a slice's output rows for the training nodes, to the learner
    "slice_gradients",  # their gradients, back to the slice
    "fused_gradients",  # with feature fusion: the gradient of a fused slice, back to the learner
]
KINDS: Final[tuple[TrafficKind, ...]] = (
    "features",
    "representations",
    "representation_gradients",
    "model_gradients",
    "weights",
    "evaluation",
    "control",
    "fused_slices",
    "slice_outputs",
    "slice_gradients",
    "fused_gradients",
)
TRAINING_KINDS: Final = KINDS[:5]
REPORT_TAG: Final = len(KINDS)  # uncounted: each worker's ledger, sent to the master at the end


def tag_of(kind: str) -> int:
    """The message tag of ``kind``."""
    return KINDS.index(kind)
