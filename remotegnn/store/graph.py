"""From an edge list to the CSC and CSR the sampler walks, under an explicit edge policy.

Policy (documented in docs/remotegnn.md): node ids outside [0, num_nodes) are always an error.
Self loops and duplicate edges are dropped by default and counted in the report, since a
sampler that draws the same neighbour twice, or a node as its own neighbour, biases the batch;
``keep`` stores them as given (the PyG round trip uses it, so it is exact) and ``error``
refuses the input. ``undirected`` reads each line as an unordered pair and stores both
directions, as PyG's ``to_undirected`` does; a pair given in both directions is then a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from foundation.models import StrictModel


class EdgePolicy(StrictModel):
    self_loops: Literal["keep", "drop", "error"] = "drop"
    duplicates: Literal["keep", "drop", "error"] = "drop"
    undirected: bool = False


KEEP_AS_GIVEN = EdgePolicy(self_loops="keep", duplicates="keep")


@dataclass(frozen=True)
class EdgeReport:
    """What the policy did, so converters can tell the user."""

    given: int
    self_loops_dropped: int
    duplicates_dropped: int
    stored: int

    def summary(self) -> str:
        return (
            f"{self.given:,} edges read, {self.self_loops_dropped:,} self loops and "
            f"{self.duplicates_dropped:,} duplicates dropped, {self.stored:,} directed edges stored"
        )
