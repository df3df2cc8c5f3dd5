"""The dataset profile: a versioned JSON schema shared with ``remotegnn profile``.

A profile describes a graph by its sizes and by its *cache curves*: for a cache policy, the share
of feature reads served when the top x of nodes (by that policy's ranking) are cached. The planner
uses a curve twice: for the cache hit rate at the cache size RAM leaves, and as the access
distribution from which it estimates how many distinct nodes a mini-batch touches.

Two optional fields make that batch estimate faithful (costmodel/batch.py): ``batch_shapes``,
mean batch shapes measured by sampling real batches, and ``in_degree``, a histogram of in-degree
from which the expected neighbours per sampled node follow. Both default to empty so profiles
written before them (and the built-ins, which have no per-node data) still load unchanged.
"""

from __future__ import annotations

import math
from functools import cached_property
from pathlib import Path
from typing import Annotated, Final, Literal

import numpy as np
from pydantic import AfterValidator, Field, field_validator, model_validator

from foundation.errors import UsageError
from foundation.fileio import read_model
from foundation.models import StrictModel
from foundation.units import FLOAT16_BYTES, FLOAT32_BYTES

PROFILE_SCHEMA_VERSION: Final = 1
DTYPE_BYTES = {"float32": FLOAT32_BYTES, "float16": FLOAT16_BYTES}
CachePolicy = Literal["degree", "presample"]

BUILTIN_DATASETS: Final = ("papers100M", "mag240m", "igb260m", "friendster", "products", "arxiv", "reddit")
"""The planner's built-in datasets as its catalog spells them (planner.datasets.builtin holds their
profiles). Here, below the planner, so that every request model that names one can spell it the
catalog's way."""


def canonical_dataset_name(name: str) -> str:
    """The catalog's spelling of a built-in dataset named in any case ('papers100m' -> 'papers100M').

    A request, and so its plan id, is the same however the user typed the name. Any other name
    is kept as given: the planner reports it unknown, with close matches, where it looks it up.
    """
    folded = name.casefold()
    return next((known for known in BUILTIN_DATASETS if known.casefold() == folded), name)


DatasetName = Annotated[str, AfterValidator(canonical_dataset_name)]
"""A request's built-in dataset name, in the catalog's spelling once validated."""


EXACT_DEGREES = 64  # one bin per degree up to this (fanouts live here), then bins doubling in width


HISTOGRAM_BLOCK = 1 << 20
"""Degrees binned per step."""


def degree_histogram(degrees) -> DegreeHistogram:
    """The compact in-degree histogram of a graph from its per-node in-degrees (read a block
    at a time, so a memory-mapped array of 10^8 degrees is never copied whole)."""
    top = int(np.max(degrees, initial=0))
    starts = list(range(min(top, EXACT_DEGREES) + 1))
    while starts[-1] * 2 <= top:
        starts.append(starts[-1] * 2)
    edges = np.asarray(starts)
    counts = np.zeros(len(starts), dtype=np.int64)
    sums = np.zeros(len(starts))
    for a in range(0, len(degrees), HISTOGRAM_BLOCK):
        block = np.asarray(degrees[a : a + HISTOGRAM_BLOCK], dtype=np.int64)
        bins = np.searchsorted(edges, block, side="right") - 1
        counts += np.bincount(bins, minlength=len(starts))
        sums += np.bincount(bins, weights=block, minlength=len(starts))
    means = np.where(counts > 0, sums / np.maximum(counts, 1), np.asarray(starts, dtype=float))
    return DegreeHistogram(starts=starts, counts=counts.tolist(), means=means.tolist())


def csr_csc_bytes(num_nodes: int, num_edges: int, index_bytes: int) -> int:
    """Bytes of a CSR plus a CSC of the graph: int64 indptr (N+1) and ``index_bytes`` per edge, twice."""
    return 2 * ((num_nodes + 1) * 8 + num_edges * index_bytes)


class MeasuredBatch(StrictModel):
    """The mean shape of sampled mini-batches for one (fanouts, batch size), measured on the graph.

    Measured rather than modelled because every volume and network figure scales with the node
    count, and no summary of the degree distribution captures which nodes the sampler reaches.
    """

    fanouts: list[int] = Field(min_length=1, max_length=6, description="neighbours sampled per hop; -1 = all")
    batch_size: int = Field(gt=0, le=1_000_000, description="seeds per batch asked for")
    nodes_per_hop: list[float] = Field(description="mean distinct nodes first reached at each hop (hop 0 = the seeds)")
    edges_per_hop: list[float] = Field(description="mean sampled edges at hops 1..L")
    batches: int = Field(gt=0, description="batches the means are over")

    @model_validator(mode="after")
    def _hops_consistent(self) -> MeasuredBatch:
        hops = len(self.fanouts)
        if len(self.nodes_per_hop) != hops + 1 or len(self.edges_per_hop) != hops:
            raise ValueError(f"{hops} fanouts need {hops + 1} nodes_per_hop (seeds first) and {hops} edges_per_hop")
        if any(v < 0 or math.isnan(v) for v in (*self.nodes_per_hop, *self.edges_per_hop)):
            raise ValueError("batch shape figures must be non-negative numbers")
        return self


class DegreeHistogram(StrictModel):
    """In-degree histogram: bin ``i`` holds ``counts[i]`` nodes with degree in [starts[i], starts[i+1]),
    whose mean degree is ``means[i]``.

    Compact (exact bins for small degrees, where fanouts fall, and wider ones above) yet enough for
    E[min(fanout, degree)], which a mean degree is not: on a skewed graph most nodes have fewer
    neighbours than the fanout while a few hubs hold most edges.
    """

    starts: list[int] = Field(min_length=1, max_length=1000, description="lowest degree of each bin, increasing from 0")
    counts: list[int] = Field(description="nodes per bin")
    means: list[float] = Field(description="mean degree of the nodes in each bin")

    @model_validator(mode="after")
    def _bins_consistent(self) -> DegreeHistogram:
        if not len(self.starts) == len(self.counts) == len(self.means):
            raise ValueError("starts, counts and means need one entry per bin")
        if self.starts[0] != 0 or any(b <= a for a, b in zip(self.starts, self.starts[1:])):
            raise ValueError("starts must begin at 0 and increase strictly")
        if any(c < 0 for c in self.counts) or sum(self.counts) == 0:
            raise ValueError("counts must be non-negative and not all zero")
        ends = [*self.starts[1:], math.inf]
        if any(c and not (lo <= m < hi) for lo, hi, c, m in zip(self.starts, ends, self.counts, self.means)):
            raise ValueError("each bin's mean degree must lie within the bin")
        return self

    def expected_min(self, fanout: int) -> float:
        """E[min(fanout, degree)] over nodes; -1 (all neighbours) gives the mean degree.

        Exact for bins entirely below or above the fanout; a bin straddling it counts min(fanout,
        its mean), at most its true share (min is concave), and bins one degree wide never straddle.
        """
        counts, means = np.asarray(self.counts, dtype=float), np.asarray(self.means)
        per_node = means if fanout == -1 else np.minimum(float(fanout), means)
        return float(np.sum(counts * per_node) / np.sum(counts))


class DatasetProfile(StrictModel):
    """What the planner knows about a graph (schema ``memorybridge.dataset-profile`` v1)."""

    schema_version: Literal[1] = PROFILE_SCHEMA_VERSION
    name: str = Field(min_length=1, max_length=200)
    num_nodes: int = Field(gt=0, le=10**12)
    num_edges: int = Field(ge=0, le=10**13, description="stored directed edges")
    feature_rows: int = Field(
        gt=0, le=10**12, description="rows of the feature matrix (typed graphs may have fewer than nodes)"
    )
    feature_dim: int = Field(gt=0, le=1_000_000)
    feature_dtype: Literal["float32", "float16"] = "float32"
    index_bytes: Literal[4, 8] = Field(4, description="bytes per node index in the CSR/CSC")
    num_train: int = Field(gt=0, le=10**12, description="training seed nodes per epoch")
    structure_bytes: int = Field(ge=0, le=10**15, description="bytes of the CSR + CSC kept in RAM on every memory node")
    cache_curves: dict[CachePolicy, list[tuple[float, float]]] = Field(
        description="per policy, points (fraction of nodes cached, share of reads served); (0,0) and (1,1) implied"
    )
    source: str = Field("", max_length=2000, description="where the figures come from")
    batch_shapes: list[MeasuredBatch] = Field(
        default_factory=list, max_length=100, description="mean batch shapes measured by sampling (remotegnn profile)"
    )
    in_degree: DegreeHistogram | None = Field(None, description="in-degree histogram (remotegnn profile)")
    num_classes: int | None = Field(
        None, gt=0, le=1_000_000, description="label classes (the output width of full-graph models); none: unlabelled"
    )

    @field_validator("cache_curves")
    @classmethod
    def _curves_valid(cls, curves: dict[str, list[tuple[float, float]]]) -> dict[str, list[tuple[float, float]]]:
        if "degree" not in curves:
            raise ValueError("a 'degree' curve is required (the planner's default cache policy)")
        for policy, points in curves.items():
            if not 1 <= len(points) <= 1000:
                raise ValueError(f"{policy}: give between 1 and 1000 points")
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            if any(not (0 < x <= 1) or not (0 <= y <= 1) or math.isnan(x + y) for x, y in points):
                raise ValueError(f"{policy}: points must have 0 < x <= 1 and 0 <= y <= 1")
            if any(b <= a for a, b in zip(xs, xs[1:])):
                raise ValueError(f"{policy}: x must increase strictly")
            if any(b < a for a, b in zip(ys, ys[1:])):
                raise ValueError(f"{policy}: y must not decrease (caching more never serves fewer reads)")
        return curves

    @model_validator(mode="after")
    def _sizes_consistent(self) -> DatasetProfile:
        if self.num_train > self.num_nodes:
            raise ValueError("num_train cannot exceed num_nodes")
        if self.feature_rows > self.num_nodes:
            raise ValueError("feature_rows cannot exceed num_nodes")
        return self

    @property
    def row_bytes(self) -> int:
        return self.feature_dim * DTYPE_BYTES[self.feature_dtype]

    @property
    def feature_bytes(self) -> int:
        return self.feature_rows * self.row_bytes

    @property
    def total_bytes(self) -> int:
        """|G| in the paper's model: structure plus features."""
        return self.structure_bytes + self.feature_bytes

    @property
    def avg_degree(self) -> float:
        return self.num_edges / self.num_nodes

    def measured_batch(self, fanouts: list[int], batch_size: int) -> MeasuredBatch | None:
        """The measured shape for exactly these fanouts and batch size, if the profile has one."""
        return next((m for m in self.batch_shapes if m.fanouts == list(fanouts) and m.batch_size == batch_size), None)

    def curve(self, policy: CachePolicy) -> CacheCurve:
        if policy not in self.cache_curves:
            raise UsageError(
                f"dataset {self.name!r} has no {policy!r} cache curve "
                f"(it has: {', '.join(sorted(self.cache_curves))}); "
                "pick one of those with --cache-policy or add the curve to the profile"
            )
        return CacheCurve(self.cache_curves[policy])


class CacheCurve:
    """A piecewise-linear, monotone curve through (0, 0), the given points and (1, 1)."""

    def __init__(self, points: list[tuple[float, float]]):
        pts = [(0.0, 0.0), *((float(x), float(y)) for x, y in points)]
        if pts[-1][0] < 1.0:
            pts.append((1.0, 1.0))
        self.x = np.array([p[0] for p in pts])
        self.y = np.array([p[1] for p in pts])

    def hit_rate(self, cache_fraction):
        """Share of reads served from a cache holding ``cache_fraction`` of the rows (array-friendly).

        Fractions outside [0, 1] read as 0 and 1: np.interp holds the end values, (0, 0) and the
        curve's value at 1, beyond the ends (no clip: the cost model calls this on every cluster).
        """
        return np.interp(cache_fraction, self.x, self.y)

    @cached_property
    def bins(self) -> tuple[np.ndarray, np.ndarray]:
        """(share of nodes, share of accesses) per segment: the access distribution the curve implies."""
        return np.diff(self.x), np.diff(self.y)

    def expected_distinct(self, draws, population: float):
        """Expected distinct nodes among ``draws`` accesses drawn from this distribution.

        Within each segment nodes are equally likely: sum over segments of n_j (1 - exp(-R p_j)).
        """
        node_share, access_share = self.bins
        keep = node_share > 0
        n = population * node_share[keep]
        p = access_share[keep] / n
        draws = np.asarray(draws, dtype=float)
        return np.sum(n * -np.expm1(-np.multiply.outer(draws, p)), axis=-1)


def load_profile(path: str | Path) -> DatasetProfile:
    """Read a ``--dataset-file``; errors name the field and what is wrong with it."""
    return read_model(path, DatasetProfile, "dataset profile")
