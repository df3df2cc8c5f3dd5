"""PINCH's error: a kernel program that cannot be loaded, attached or talked to, and why."""

from __future__ import annotations

from foundation.errors import MemoryBridgeError


class PinchError(MemoryBridgeError):
    """A libbpf call failed; the message names the call, what it was for and, where known, the fix."""
