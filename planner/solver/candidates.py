"""Which clusters are candidates: learner x memory type x k x gp3 option, plus single machines.

The candidate set keeps its grid shape so the MILP can prune dominated clusters along each axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contracts.plan import GP3_MBPS_PER_IOPS, Filters
from foundation.errors import NotFoundError, UsageError
from planner.catalog.snapshot import Catalog
from planner.costmodel.evaluation import Clusters

# gp3 provisioning options (MB/s, IOPS): 125-1000 MB/s and 3,000-16,000 IOPS (the MemoryBridge paper, Table I),
# with gp3's limit of 0.25 MB/s per provisioned IOPS.
GP3_THROUGHPUTS = (125, 250, 500, 1000)
GP3_IOPS = (3000, 6000, 10000, 16000)


def gp3_options(mbps: int | None = None, iops: int | None = None) -> tuple[tuple[int, int], ...]:
    """The (MB/s, IOPS) options the grid prices: every allowed pair, or only those of a pinned volume.

    A pinned figure replaces its list (so 400 MB/s, not one of the grid's steps, is priced as given);
    the other figure keeps its steps, less those gp3's MB/s-per-IOPS limit rules out.
    """
    throughputs = (mbps,) if mbps is not None else GP3_THROUGHPUTS
    iops_steps = (iops,) if iops is not None else GP3_IOPS
    return tuple((t, i) for t in throughputs for i in iops_steps if t <= GP3_MBPS_PER_IOPS * i)


GP3_OPTIONS = gp3_options()


@dataclass(frozen=True)
class CandidateGrid:
    """Indices of the candidate types and the grid shapes of the two layouts.

    Clusters are laid out two-level first, as a raveled (learners, memories, k, volumes) grid,
    then single machines as a raveled (learners, volumes) grid.
    """

    learners: np.ndarray
    memories: np.ndarray
    counts: np.ndarray
    volumes: tuple[tuple[int, int], ...]

    @property
    def two_level_shape(self) -> tuple[int, int, int, int]:
        return (len(self.learners), len(self.memories), len(self.counts), len(self.volumes))

    @property
    def single_shape(self) -> tuple[int, int]:
        return (len(self.learners), len(self.volumes))


def select_types(catalog: Catalog, filters: Filters, spot: bool) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the priced learner (GPU) and memory (non-GPU) types that pass the filters."""
    _check_names(catalog, filters)
    cols = catalog.columns
    instances = cols.instances
    priced = np.isfinite(cols.price(spot))
    has_gpu = cols.gpu_count > 0
    ok = priced & np.array([i.name not in set(filters.exclude) for i in instances])
    if filters.arch:
        ok &= np.array([i.arch == filters.arch for i in instances])
    if filters.max_memory_gib:
        ok &= cols.memory_gib <= filters.max_memory_gib
    learners = ok & has_gpu
    memories = ok & ~has_gpu
    if filters.gpu_families:
        learners &= np.array([i.family in filters.gpu_families for i in instances])
    if filters.memory_families:
        memories &= np.array([i.family in filters.memory_families for i in instances])
    return np.flatnonzero(learners), np.flatnonzero(memories)


def _check_names(catalog: Catalog, filters: Filters) -> None:
    gpu_families = {i.family for i in catalog.snapshot.instances if i.has_gpu}
    cpu_families = catalog.families - gpu_families
    for family in filters.gpu_families or []:
        if family not in gpu_families:
            if family in cpu_families:
                raise UsageError(f"--gpu-families: {family} has no GPU; learners need a GPU family such as g4dn or g5")
            raise NotFoundError("GPU family", family, gpu_families)
    for family in filters.memory_families or []:
        if family not in cpu_families:
            if family in gpu_families:
                raise UsageError(
                    f"--memory-families: {family} is a GPU family; memory machines are GPU-less (r8g, x2gd, ...)"
                )
            raise NotFoundError("memory family", family, cpu_families)
    for name in filters.exclude:
        catalog.instance(name)


def build_grid(catalog: Catalog, filters: Filters, spot: bool, max_count: int) -> CandidateGrid:
    learners, memories = select_types(catalog, filters, spot)
    if len(learners) == 0:
        raise UsageError(
            "no priced GPU instance type passes the filters; relax --gpu-families, --arch, "
            "--max-memory-gib or --exclude" + (" (or drop --spot)" if spot else "")
        )
    volumes = gp3_options(filters.volume_mbps, filters.volume_iops)
    # Filters checks each pinned figure against gp3's limits, so a pinned pair always leaves an option.
    assert volumes, "the filters allow no gp3 option"
    return CandidateGrid(learners, memories, np.arange(1, max_count + 1), volumes)


def worker_clusters(catalog: Catalog, filters: Filters, spot: bool, counts: np.ndarray) -> Clusters:
    """Partitioned layouts: n identical GPU-less workers, for every allowed type and every n in ``counts``.

    Each worker has one gp3 volume, read once at start-up: the cheapest option the filters allow
    (gp3's baseline unless a volume is pinned), since a faster one only shortens that read.
    """
    _, workers = select_types(catalog, filters, spot)
    if len(workers) == 0:
        raise UsageError(
            "no priced GPU-less instance type passes the filters; relax --memory-families, --arch, "
            "--max-memory-gib or --exclude" + (" (or drop --spot)" if spot else "")
        )
    mbps, iops = gp3_options(filters.volume_mbps, filters.volume_iops)[0]
    types, n = (a.ravel() for a in np.meshgrid(workers, counts, indexing="ij"))
    return Clusters(
        learner=types,  # the master runs on worker 0
        memory=types,
        count=n,
        volume_mbps=np.full(len(n), float(mbps)),
        volume_iops=np.full(len(n), float(iops)),
    )


def grid_clusters(grid: CandidateGrid) -> Clusters:
    """The grid's clusters as flat arrays (see :class:`CandidateGrid` for the order)."""
    volumes = np.array(grid.volumes, dtype=float)
    vol_index = np.arange(len(grid.volumes))
    l2, m2, k2, v2 = (
        a.ravel() for a in np.meshgrid(grid.learners, grid.memories, grid.counts, vol_index, indexing="ij")
    )
    l1, v1 = (a.ravel() for a in np.meshgrid(grid.learners, vol_index, indexing="ij"))
    return Clusters(
        learner=np.concatenate([l2, l1]),
        memory=np.concatenate([m2, np.full(len(l1), -1)]),
        count=np.concatenate([k2, np.zeros(len(l1), dtype=int)]),
        volume_mbps=np.concatenate([volumes[v2, 0], volumes[v1, 0]]),
        volume_iops=np.concatenate([volumes[v2, 1], volumes[v1, 1]]),
    )
