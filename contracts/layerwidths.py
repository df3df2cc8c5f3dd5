"""The row widths of a K-layer GNN, from its input features to its class scores.

Shared by the planner (which counts a model's parameters, boundary rows and work from them,
without building it) and the full-graph trainer (which builds its layers from them), so that
the model the planner prices is the model that is trained.
"""

from __future__ import annotations


def layer_dims(in_dim: int, hidden: int, classes: int, layers: int) -> list[int]:
    """Widths H_0 .. H_K of a K-layer model: [in_dim, hidden x (layers - 1), classes]."""
    return [in_dim, *([hidden] * (layers - 1)), classes]
