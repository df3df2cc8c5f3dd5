"""Pricing a request's candidate clusters: everything of an answer that its constraints do not change.

A budget, a deadline or an hourly cap only filter and re-rank the candidates; the model's figures
for each cluster depend on the dataset (or profile), the workload, the filters, the model, the
market, the snapshot and the coefficients. So the priced candidates of a request are kept in a
small bounded cache under those inputs, and a request that differs only in its constraints (a
user trying budgets, a page's slider) is answered by filtering and ranking, without re-pricing
the grid: that took about 90 ms of a 130 ms answer on the full catalog.

What is kept with them is what every answer needs whatever its constraints: the best single
machine and two-level cluster, the cheapest runnable one, the cost-time frontier, the ranked
failover alternatives, and each described plan once described.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property, lru_cache

import numpy as np

from contracts.calibration import Coefficients
from contracts.plan import ClusterPlan, Filters, FrontierPoint, PlanRequest
from contracts.profile import DatasetProfile
from foundation.errors import UsageError
from planner.catalog.snapshot import Catalog
from planner.costmodel import fullgraph, paper, pipeline, slicegcn
from planner.costmodel.evaluation import Clusters, Evaluation, ModelInputs
from planner.datasets.builtin import builtin_profile
from planner.solver.candidates import CandidateGrid, build_grid, grid_clusters, worker_clusters

MODELS: dict[str, Callable[[ModelInputs, Clusters], Evaluation]] = {
    "pipeline": pipeline.evaluate,
    "paper": paper.evaluate,
}
# Full-graph methods by the method: one model prices both procedures over a partition of the nodes.
FULL_GRAPH_MODELS: dict[str, Callable[[ModelInputs, Clusters], Evaluation]] = {
    "standard": fullgraph.evaluate,
    "retexo": fullgraph.evaluate,
    "slicegcn": slicegcn.evaluate,
}
FRONTIER_POINTS = 40
FAILOVER_ALTERNATIVES = 10
CLUSTER_FIELDS = ("learner", "memory", "count", "volume_mbps", "volume_iops")
PRICED_ENTRIES = 8
"""Priced candidate sets kept at once. A full-catalog one holds about 50 MB of arrays, so the
cache stays under half a gigabyte; a page's user trying budgets needs one entry."""
NOT_PRICED = {"constraints", "top", "solver"}
"""Request fields that choose among priced candidates without changing their prices."""


def resolve_profile(request: PlanRequest) -> DatasetProfile:
    return request.profile if request.profile is not None else builtin_profile(request.dataset or "")


def model_inputs(request: PlanRequest, catalog: Catalog, coefficients: Coefficients) -> ModelInputs:
    profile = resolve_profile(request)
    if request.full_graph_method and request.full_graph.classes is None and profile.num_classes is None:
        raise UsageError(
            f"full_graph.classes: the profile of {profile.name} has no classes (unlabelled); give the output width"
        )
    return ModelInputs(
        columns=catalog.columns,
        volume=catalog.volumes["gp3"],
        profile=profile,
        workload=request.workload,
        coefficients=coefficients,
        spot=request.spot,
        ena_express=request.ena_express,
        method=request.method,
        job=request.full_graph,
        transfer=catalog.transfer,
    )


def candidate_set(catalog: Catalog, filters: Filters, spot: bool, max_count: int) -> tuple[CandidateGrid, Clusters]:
    """The candidate grid and its clusters: a function of the catalog and the filters only.

    Cached (a server answers many requests with the same filters, and building the grid was a
    tenth of a request); the arrays are made read-only because requests share them. A few
    entries only: a full-catalog grid is ~16 MB.
    """
    return _candidate_set(catalog, filters.model_dump_json(), spot, max_count)


def worker_set(catalog: Catalog, request: PlanRequest) -> Clusters:
    """The partitioned layouts a full-graph request may use (cached like :func:`candidate_set`)."""
    job, filters = request.full_graph, request.filters
    counts = (job.workers,) if job.workers is not None else tuple(range(2, filters.max_memory_nodes + 1))
    return _worker_set(catalog, filters.model_dump_json(), request.spot, counts)


@lru_cache(maxsize=4)
def _worker_set(catalog: Catalog, filters_json: str, spot: bool, counts: tuple[int, ...]) -> Clusters:
    clusters = worker_clusters(catalog, Filters.model_validate_json(filters_json), spot, np.array(counts))
    for f in CLUSTER_FIELDS:
        getattr(clusters, f).flags.writeable = False
    return clusters


@lru_cache(maxsize=4)
def _candidate_set(catalog: Catalog, filters_json: str, spot: bool, max_count: int) -> tuple[CandidateGrid, Clusters]:
    grid = build_grid(catalog, Filters.model_validate_json(filters_json), spot, max_count)
    clusters = grid_clusters(grid)
    for array in (grid.learners, grid.memories, grid.counts, *(getattr(clusters, f) for f in CLUSTER_FIELDS)):
        array.flags.writeable = False
    return grid, clusters


class Priced:
    """A request's candidates with the model's figures for each, and the rankings that do not
    depend on the constraints. Shared by concurrent requests: nothing here changes once made."""

    def __init__(
        self, request: PlanRequest, catalog: Catalog, coefficients: Coefficients, clusters: Clusters | None = None
    ):
        """Evaluate ``clusters``, or the whole candidate grid the request's filters allow."""
        self.request, self.catalog = request, catalog
        self.inputs = model_inputs(request, catalog, coefficients)
        self.grid: CandidateGrid | None = None  # only a whole grid has one (the MILP needs its shape)
        if clusters is None and request.full_graph_method:
            clusters = worker_set(catalog, request)
        elif clusters is None:
            max_count = 1 if request.model == "paper" else request.filters.max_memory_nodes
            self.grid, clusters = candidate_set(catalog, request.filters, request.spot, max_count)
        self.clusters = clusters
        evaluate = FULL_GRAPH_MODELS[request.method] if request.full_graph_method else MODELS[request.model]
        self.ev = evaluate(self.inputs, self.clusters)
        self.described: dict[int, ClusterPlan] = {}  # plans described so far, by candidate (see recommend.describe)

    def order(self, mask: np.ndarray, head: int | None = None) -> np.ndarray:
        """Indices under ``mask`` ranked by the rule every answer states (contracts.plan.RANKING_RULE):
        cheapest first, then fastest, then the tie-breaks of :meth:`tie_keys`.

        Ties are real: the paper model gives every cluster whose memory machine holds the whole
        dataset a time (and so a cost) of zero, and a small graph's plans differ by fractions of a
        cent. Ranking them by stated keys, not by where a type sits in the snapshot, keeps the
        order the same across snapshots, solvers and interfaces.

        With ``head``, only a prefix of the ranking with at least ``head`` entries (all of them
        when fewer): the candidates that cost at most the head-th lowest cost, which are exactly
        the ranking's first entries since cost is its first key. Sorting every candidate was most
        of a request's time, and most callers need only the first few.
        """
        idx = np.flatnonzero(mask)
        ev = self.ev
        if head is not None and len(idx) > head:
            cost = ev.total_usd[idx]
            # the head-th lowest cost, NaN last; a minimum is a tenth of a partition's time
            cut = np.fmin.reduce(cost) if head == 1 else np.partition(cost, head - 1)[head - 1]
            if not np.isnan(cut):  # NaN sorts last: only then is the cut not a cost bound
                idx = idx[cost <= cut]
        return idx[np.lexsort((*self.tie_keys(idx), ev.total_hours[idx], ev.total_usd[idx]))]

    def tie_keys(self, idx: np.ndarray) -> tuple[np.ndarray, ...]:
        """The ranking's keys after cost and time, least significant first (as np.lexsort takes
        them): USD/h, then machines, then the learner's name and the memory type's (A to Z), then
        volume MB/s and IOPS. Together they tell any two candidates apart."""
        c, rank = self.clusters, self.catalog.columns.name_rank
        memory = c.memory[idx]
        memory_rank = np.where(memory >= 0, rank[memory], -1)  # a single machine has none
        return (
            c.volume_iops[idx],
            c.volume_mbps[idx],
            memory_rank,
            rank[c.learner[idx]],
            c.count[idx],
            self.ev.hourly_usd[idx],
        )

    def first(self, mask: np.ndarray) -> int | None:
        """The top-ranked index under ``mask`` (None when the mask is empty)."""
        ranked = self.order(mask, head=1)
        return int(ranked[0]) if len(ranked) else None

    def distinct(self, ranked: np.ndarray, limit: int, exclude: int | None = None) -> list[int]:
        """The best entry per (learner, memory type, k), in rank order."""
        seen, out = set(), []
        if exclude is not None:
            seen.add(self.key(exclude))
        for i in ranked:
            key = self.key(int(i))
            if key not in seen:
                seen.add(key)
                out.append(int(i))
                if len(out) == limit:
                    break
        return out

    def key(self, i: int) -> tuple[int, int, int]:
        """What makes two candidates the same cluster for a failover list: learner, memory type, k."""
        c = self.clusters
        return int(c.learner[i]), int(c.memory[i]), int(c.count[i])

    def distinct_under(self, mask: np.ndarray, limit: int, exclude: int | None = None) -> list[int]:
        """``distinct(order(mask), ...)`` without ranking every candidate under ``mask``.

        Ranks a growing prefix until it holds ``limit`` distinct clusters: the scan over a prefix
        picks the same entries as the scan over the whole ranking once it has found them all.
        """
        total = int(np.count_nonzero(mask))
        head = 64 * (limit + 1)
        while True:
            ranked = self.order(mask, head=head)
            out = self.distinct(ranked, limit, exclude)
            if len(out) == limit or len(ranked) == total:
                return out
            head *= 8

    def alternatives(self, best: int | None) -> list[int]:
        """The failover list beside plan ``best``: the best runnable candidate of each other
        cluster, in rank order. The first ten and one more are ranked once per priced set; the
        one that is ``best``'s cluster, if there, is dropped."""
        best_key = None if best is None else self.key(best)
        return [i for i in self._ranked_distinct if self.key(i) != best_key][:FAILOVER_ALTERNATIVES]

    @cached_property
    def _ranked_distinct(self) -> list[int]:
        return self.distinct_under(self.ev.feasible, FAILOVER_ALTERNATIVES + 1)

    @cached_property
    def single_machine(self) -> int | None:
        """The best runnable single machine (sampled training only: full-graph has no such layout)."""
        return None if self.request.full_graph_method else self.first(self.ev.feasible & (self.clusters.count == 0))

    @cached_property
    def two_level(self) -> int | None:
        """The best runnable learner with memory machines (sampled training only)."""
        return None if self.request.full_graph_method else self.first(self.ev.feasible & (self.clusters.count > 0))

    @cached_property
    def cheapest(self) -> int | None:
        return self.first(self.ev.feasible)

    @cached_property
    def frontier(self) -> list[FrontierPoint]:
        """Clusters no other cluster beats on both total cost and total time."""
        ev = self.ev
        idx = _frontier_candidates(ev.total_hours, ev.total_usd, np.flatnonzero(ev.feasible))
        # Ties on time and cost are broken as order() breaks them, so a frontier point and the
        # chosen plan agree on which of several equal clusters they name.
        idx = idx[np.lexsort((*self.tie_keys(idx), ev.total_usd[idx], ev.total_hours[idx]))]
        cost = ev.total_usd[idx]
        running = np.minimum.accumulate(cost)
        keep = np.concatenate([[True], cost[1:] < running[:-1]]) if len(idx) else np.array([], dtype=bool)
        points = idx[keep]
        if len(points) > FRONTIER_POINTS:
            points = points[np.unique(np.linspace(0, len(points) - 1, FRONTIER_POINTS).round().astype(int))]
        return [
            FrontierPoint(
                total_hours=float(ev.total_hours[i]), total_usd=float(ev.total_usd[i]), label=self.label(int(i))
            )
            for i in points
        ]

    def label(self, i: int) -> str:
        c, names = self.clusters, self.catalog.columns.instances
        if self.request.full_graph_method:
            return f"{int(c.count[i])}x {names[int(c.memory[i])].name}"
        learner = names[int(c.learner[i])].name
        if c.count[i] == 0:
            return f"{learner} alone"
        return f"{learner} + {int(c.count[i])}x {names[int(c.memory[i])].name}"


def _frontier_candidates(hours: np.ndarray, cost: np.ndarray, idx: np.ndarray, stride: int = 64) -> np.ndarray:
    """``idx`` less entries that cannot be on the frontier, so only a few thousand get sorted.

    An entry is dropped when a sample (every ``stride``-th entry) is strictly faster and no
    dearer. The frontier is unchanged: every dropped entry has a kept entry that is strictly
    faster and no dearer (follow the chain of samples down to one no sample drops), and that
    entry precedes it in the frontier's sort, so the running minimum cost is the same.
    """
    if len(idx) <= 4 * stride:
        return idx
    h, c = hours[idx], cost[idx]
    sample = slice(None, None, stride)
    by_time = np.argsort(h[sample], kind="stable")
    sample_h = h[sample][by_time]
    cheapest_so_far = np.minimum.accumulate(c[sample][by_time])
    faster = np.searchsorted(sample_h, h, side="left")  # samples strictly faster than each entry
    bound = np.where(faster > 0, cheapest_so_far[np.maximum(faster - 1, 0)], np.inf)
    return idx[~(c >= bound)]


def price(request: PlanRequest, catalog: Catalog, coefficients: Coefficients) -> Priced:
    """The request's whole candidate grid priced, from the cache when a request with the same
    pricing inputs (everything but ``NOT_PRICED``) was priced before on this catalog."""
    return _price(catalog, coefficients.model_dump_json(), request.model_dump_json(exclude=NOT_PRICED))


@lru_cache(maxsize=PRICED_ENTRIES)
def _price(catalog: Catalog, coefficients_json: str, request_json: str) -> Priced:
    priced = Priced(
        PlanRequest.model_validate_json(request_json), catalog, Coefficients.model_validate_json(coefficients_json)
    )
    ev = priced.ev
    for figure in (ev.epoch_s, ev.bottleneck, ev.total_hours, ev.total_usd, ev.feasible):
        figure.flags.writeable = False  # computed now, so concurrent requests only ever read them
    for ranking in ("single_machine", "two_level", "cheapest", "frontier", "_ranked_distinct"):
        getattr(priced, ranking)
    return priced


def forget_priced() -> None:
    """Drop every cached priced set, so the next answer prices its grid again (what a benchmark
    of an uncached answer needs)."""
    _price.cache_clear()
