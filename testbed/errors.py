"""The testbed's errors: one line each, naming the step or the option and what to do about it."""

from __future__ import annotations

from foundation.errors import MemoryBridgeError


class TestbedError(MemoryBridgeError):
    """A kernel step (ip, tc, a cgroup write) failed, or a testbed's recorded state is missing or broken."""


class Unsupported(TestbedError):
    """This machine lacks something the testbed needs (root, iproute2, tbf, cgroup v1 blkio, mpiexec)."""
