"""Provisioning's errors: planner's hierarchy (one-line messages, exit codes), plus what EC2 can say.

They subclass :class:`planner.errors.MemoryBridgeError` so the ``provision`` CLI prints them the way
``planner`` does: one line, no traceback, exit 2 for a request that makes no sense and 1 for one
that AWS could not satisfy. EC2's own errors keep their code (``AwsError.code``) because failover
decides on it: a capacity code moves the cluster to another zone, a quota code to another plan.
"""

from __future__ import annotations

from contextlib import contextmanager

from foundation.errors import MemoryBridgeError, UsageError


class ProvisioningError(MemoryBridgeError):
    """Something on the AWS side failed; the message says what and what to do."""


class AwsError(ProvisioningError):
    """An EC2/SSM API error, with the service's error code and the operation that raised it."""

    def __init__(self, operation: str, code: str, message: str):
        self.operation, self.code, self.aws_message = operation, code, message
        super().__init__(f"{operation}: {code}: {message}")


class EndpointError(ProvisioningError):
    """The AWS endpoint could not be reached, or answered something that is not an AWS answer (an HTML
    error page, a bare HTTP status): nothing says what AWS thinks, so the message says where to look."""

    def __init__(self, operation: str, message: str):
        self.operation = operation
        super().__init__(f"{operation}: {message}")


class ClusterConflictError(UsageError):
    """The name is taken by another plan or by a resource this tool did not create."""


class NoCapacityError(ProvisioningError):
    """Every plan of the plan file was tried in every zone that offers its types; none could launch."""


class PlanUnavailableError(ProvisioningError):
    """One plan cannot be launched in this region at all (unknown type, no zone offers it, no image)."""


class AmiNotFoundError(PlanUnavailableError):
    """No machine image for a role and architecture in this region (pass --ami-learner/--ami-memory)."""


class CleanupError(ProvisioningError):
    """Deleting resources (rollback or `provision down`) left some behind; the message names them."""


class WaitError(ProvisioningError):
    """A waiter gave up: a resource reached a failure state or did not get there in time."""


@contextmanager
def refuse_foreign_name(code: str, what: str, name: str, cluster: str):
    """Around a create: EC2's ``code`` (a duplicate name) means an untagged resource - not ours -
    already holds the cluster's name; say so instead of adopting or overwriting it."""
    try:
        yield
    except AwsError as exc:
        if exc.code == code:
            raise ClusterConflictError(
                f"a {what} named {name} exists but is not tagged for cluster {cluster}; "
                "delete it or choose another --name"
            ) from None
        raise
