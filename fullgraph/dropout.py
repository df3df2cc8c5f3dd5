"""Dropout drawn from a generator the caller owns, shared by every full-graph method.

``torch.nn.functional.dropout`` draws from the global generator, which the ranks of one process
(threads) share, so their masks would depend on thread timing. Each worker passes its own
generator instead, which makes a run reproducible in threads and under MPI alike; RETEXO, standard
training and SliceGCN use this one function so that they all draw their masks the same way.
"""

from __future__ import annotations

import torch
from torch import Tensor


def dropout(x: Tensor, p: float, training: bool, generator: torch.Generator) -> Tensor:
    """Zero each entry of ``x`` with probability ``p`` and scale the rest by 1 / (1 - p), drawing
    the mask from ``generator``; ``x`` itself when not training or when ``p`` is 0."""
    if not training or p == 0.0:
        return x
    keep = torch.empty_like(x).bernoulli_(1.0 - p, generator=generator)
    return x * keep / (1.0 - p)
