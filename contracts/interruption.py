"""A spot machine's two-minute warning, as the machine's notice agent writes it and `provision run`
reads it over SSH; and how `provision run` asks a training job for a checkpoint now.

AWS announces that it will reclaim a spot instance about two minutes ahead, in the instance's own
metadata (``spot/instance-action``). The agent the boot script starts on each spot machine
(``provisioning.notice_agent``) writes the announcement, with the instance's id, to
:data:`NOTICE_FILE`; the id lets the reader ignore a file that is not this instance's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import Field

from foundation.models import StrictModel

NOTICE_FILE: Final = "/var/lib/memorybridge/interruption.json"
CHECKPOINT_REQUEST_ENV: Final = "MEMORYBRIDGE_CHECKPOINT_REQUEST"
"""Names a file whose appearance asks the training script's Checkpointer to save at its next step
(it removes the file once the checkpoint is written); `remotegnn launch --checkpoint-request` sets it."""


class InterruptionNotice(StrictModel):
    """AWS will reclaim this instance: what it will do, and when."""

    instance_id: str = Field(description="the instance the notice is for (from its metadata)")
    action: Literal["terminate", "stop", "hibernate"] = Field(description="what AWS will do to it")
    time: datetime = Field(description="when AWS will do it (UTC)")
    noticed_at: datetime = Field(default_factory=lambda: datetime.now(UTC), description="when the agent read it")
