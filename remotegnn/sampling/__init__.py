"""Numba-compiled uniform k-hop neighbour sampling, PyG-compatible output."""

from remotegnn.sampling.sampler import NeighborSampler, SampledSubgraph

__all__ = ["NeighborSampler", "SampledSubgraph"]
