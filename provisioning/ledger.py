"""The ledger of one `provision up` invocation: the attempt id that tags what it creates, the ids it
created, and its rollback.

Rollback deletes exactly what this invocation created: the ids it recorded, plus anything carrying
its attempt tag (a create whose response was lost still has it). Resources an earlier ``up`` made
are never touched, so a failed second ``up`` cannot take down a working cluster. (`provision run`,
the training job, lives in ``provisioning.job.runner``.)
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from provisioning import tags, teardown
from provisioning.aws import Aws
from provisioning.errors import ProvisioningError
from provisioning.inventory import ResourceIds, discover


@dataclass
class Ledger:
    """What one ``up`` created in ``cluster`` for ``plan_id``; ``report`` hears each rollback step."""

    aws: Aws
    cluster: str
    plan_id: str
    report: Callable[[str], None] = lambda _: None
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    created: ResourceIds = field(default_factory=ResourceIds)

    def tags(self, role: str, rank: int, usd_per_hour: float = 0.0, node: str | None = None) -> dict[str, str]:
        return tags.cluster_tags(self.cluster, role, self.plan_id, rank, usd_per_hour, self.attempt, node)

    def client_token(self, *parts: str) -> str:
        """Deterministic within this ``up``, so a retried create cannot make a second resource on AWS.

        It includes the attempt id because AWS remembers a token even after the instance it made is
        terminated: a token reused by a later ``up`` would hand back that dead instance.
        """
        return hashlib.sha256("/".join((self.cluster, self.attempt, *parts)).encode()).hexdigest()[:64]

    def rollback(self, zonal_only: bool = False) -> ResourceIds:
        """Delete what this ``up`` created (only instances, volumes and placement groups if ``zonal_only``)."""
        doomed = self.created
        try:
            doomed = doomed.merge(discover(self.aws, self.cluster, self.attempt).ids())
        except ProvisioningError as exc:
            self.report(f"could not list this attempt's resources by tag ({exc}); deleting the recorded ones")
        if zonal_only:
            doomed = doomed.zonal()
        if doomed.is_empty():
            return doomed
        self.report(f"rolling back: deleting {', '.join(doomed.labels())}")
        try:
            return teardown.delete(self.aws, doomed, self.report)
        finally:
            self.created = self.created.minus(doomed) if zonal_only else ResourceIds()
