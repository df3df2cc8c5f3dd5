"""A graph's degree distribution when all the profile says is its size and its degree skew.

The built-in profiles hold no per-node data: their number of nodes and edges (so the mean degree)
and a degree curve, the share of edge endpoints the top x of nodes by degree hold (the MemoryBridge
paper's figures for papers100M). That curve is the Lorenz curve of the degree distribution, and a
lognormal's Lorenz curve has one parameter: the top x of nodes hold Phi(sigma + Phi^-1(x)) of the
edges. So sigma is fitted to the curve (least squares in probit space, where each point gives
sigma directly) and mu to the mean degree. papers100M's four published points give sigma = 1.12
(each point alone: 0.95 to 1.21).

The lognormal answers what a batch estimate needs in closed form: E[min(fanout, D)], the
neighbours one node contributes, both for a node drawn uniformly (a seed) and for a node reached
along an edge, whose degree is size-biased (a node of degree d is reached d times as often): the
size-biased lognormal is the lognormal with mu + sigma^2. On undirected graphs that is exact; on a
directed graph it assumes a node's in- and out-degree go together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

_NORMAL: Final = NormalDist()
MAX_SIGMA: Final = 4.0
"""Beyond this the top 1% of nodes would hold over 99.9% of the edges: no real graph's skew."""


@dataclass(frozen=True)
class LognormalDegrees:
    """Degrees distributed as exp(N(mu, sigma^2)) with mean ``mean``."""

    mean: float
    sigma: float

    @classmethod
    def fit(cls, mean_degree: float, curve: list[tuple[float, float]]) -> LognormalDegrees:
        """The lognormal of ``mean_degree`` whose Lorenz curve is nearest ``curve`` (points (x, y):
        the top x of nodes by degree hold y of the edges). Points at 0 or 1 say nothing of sigma."""
        sigmas = [_NORMAL.inv_cdf(y) - _NORMAL.inv_cdf(x) for x, y in curve if 0 < x < 1 and 0 < y < 1]
        sigma = sum(sigmas) / len(sigmas) if sigmas else 0.0
        return cls(mean=mean_degree, sigma=min(max(sigma, 0.0), MAX_SIGMA))

    def expected_min(self, fanout: int, *, along_edge: bool) -> float:
        """E[min(fanout, D)]: the neighbours a node contributes when ``fanout`` are sampled (-1: all).

        ``along_edge``: the node was reached along an edge, so its degree is size-biased.
        """
        s2 = self.sigma * self.sigma
        mean = self.mean * math.exp(s2) if along_edge else self.mean  # E[D^2] / E[D] when size-biased
        if fanout == -1:
            return mean
        if self.sigma == 0.0 or self.mean <= 0.0:
            return min(float(fanout), mean)
        mu = math.log(mean) - s2 / 2
        log_f = math.log(fanout)
        below = mean * _NORMAL.cdf((log_f - mu - s2) / self.sigma)  # E[D; D < f]
        return below + fanout * (1.0 - _NORMAL.cdf((log_f - mu) / self.sigma))
