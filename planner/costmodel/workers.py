"""The GPU-less workers of full-graph training, as every full-graph model prices them.

Whatever a method runs on them (a partition of the nodes each, or a column slice of the
features), a cluster is n identical workers of one type, each with its own gp3 volume read once
at start-up, and a master on worker 0's machine. The models differ in the work, the bytes and
the RAM; what the machines give them is the same, and lives here so both price it alike:

- CPU: dense products and edge-wise aggregation at separate per-vCPU rates (``Coefficients``);
- link: the instance's baseline x ``network_efficiency``, capped where traffic leaves the region;
- latency and the price of a GB moved: by where the workers are (``--workers-in``);
- RAM: the instance's, less the OS reserve;
- the bill: n x (the instance and its volume) by the hour; on spot, interruptions priced as
  starting the job over (full-graph training keeps no checkpoints), and on demand where that wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from contracts.plan import Unrunnable
from contracts.workload import WorkersIn
from foundation.units import GIB
from planner.catalog.models import DataTransferPrices
from planner.costmodel.evaluation import Clusters, Evaluation, ModelInputs, first_unrunnable
from planner.costmodel.gnn import Work
from planner.costmodel.interruptions import spot_or_on_demand, workers_hazard

# AWS caps traffic that leaves the region (another region, the internet) at 5 Gbit/s per instance
# below 32 vCPUs, and at half its bandwidth from 32 vCPUs up.
WAN_GBPS: Final = 5.0
WAN_HALF_BANDWIDTH_VCPUS: Final = 32


@dataclass(frozen=True)
class Placement:
    latency_s: float  # one message's one-way latency, MPI's overhead included
    leaves_region: bool  # capped as traffic to another region or the internet


# Typical one-way latencies: tens of microseconds within an AZ (plus MPI), about half a millisecond
# between AZs of a region, tens of milliseconds between US regions and over the internet.
PLACEMENTS: dict[WorkersIn, Placement] = {
    "zone": Placement(latency_s=0.0001, leaves_region=False),
    "zones": Placement(latency_s=0.0005, leaves_region=False),
    "regions": Placement(latency_s=0.035, leaves_region=True),
    "internet": Placement(latency_s=0.05, leaves_region=True),
}


def usd_per_gb_moved(prices: DataTransferPrices, where: WorkersIn) -> float:
    """What one GB from one worker to another costs: cross-AZ traffic is billed on both sides."""
    return {
        "zone": prices.same_az_usd_per_gb,
        "zones": 2 * prices.cross_az_usd_per_gb,
        "regions": prices.cross_region_usd_per_gb,
        "internet": prices.internet_egress_usd_per_gb,
    }[where]


def worker_link_gbps(baseline: np.ndarray, vcpus: np.ndarray, placement: Placement) -> np.ndarray:
    """A worker's usable Gbit/s before efficiency: its baseline, capped where traffic leaves the region."""
    if not placement.leaves_region:
        return baseline
    return np.where(vcpus >= WAN_HALF_BANDWIDTH_VCPUS, baseline / 2, np.minimum(baseline, WAN_GBPS))


@dataclass(frozen=True)
class Storage:
    """Each worker's volume and what the cluster costs by the hour with it."""

    size_gb: np.ndarray
    load_s: np.ndarray  # reading what it holds, once, at start-up (the workers read in parallel)
    hourly_usd: np.ndarray  # n x (instance + volume)


@dataclass(frozen=True)
class Workers:
    """The workers of every candidate cluster: their count, rates, RAM, price and placement."""

    inputs: ModelInputs
    clusters: Clusters
    n: np.ndarray
    placement: Placement
    link_gbps: np.ndarray  # usable: after the region's cap and efficiency
    dense_flops: np.ndarray
    sparse_flops: np.ndarray
    usd_per_gb: float

    @classmethod
    def of(cls, inputs: ModelInputs, clusters: Clusters) -> Workers:
        co, cols, worker = inputs.coefficients, inputs.columns, clusters.memory
        placement = PLACEMENTS[inputs.job.workers_in]
        vcpus = cols.vcpus[worker]
        assert inputs.transfer is not None, "full-graph methods are priced with the catalog's transfer prices"
        return cls(
            inputs=inputs,
            clusters=clusters,
            n=clusters.count.astype(float),
            placement=placement,
            link_gbps=worker_link_gbps(cols.network_baseline_gbps[worker], vcpus, placement) * co.network_efficiency,
            dense_flops=vcpus * co.cpu_dense_gflops_per_vcpu * 1e9,
            sparse_flops=vcpus * co.cpu_sparse_gflops_per_vcpu * 1e9,
            usd_per_gb=usd_per_gb_moved(inputs.transfer, inputs.job.workers_in),
        )

    @property
    def link_bytes_s(self) -> np.ndarray:
        return self.link_gbps * 1e9 / 8

    @property
    def price(self) -> np.ndarray:
        return self.inputs.columns.price(self.inputs.spot)[self.clusters.memory]

    def compute_s(self, work: Work) -> np.ndarray:
        """Seconds of ``work`` on one worker's vCPUs."""
        return work.dense / self.dense_flops + work.sparse / self.sparse_flops

    def storage(self, stored: np.ndarray) -> Storage:
        """Volumes that hold ``stored`` bytes per worker: the cheapest gp3 option (read once)."""
        inputs, clusters = self.inputs, self.clusters
        volume_mbps = (
            np.minimum(inputs.columns.ebs_baseline_mbps[clusters.memory], clusters.volume_mbps)
            * inputs.coefficients.volume_efficiency
        )
        size_gb = inputs.volume_size_gb(clusters, stored)
        hourly = self.n * (self.price + inputs.volume.hourly_usd(size_gb, clusters.volume_iops, clusters.volume_mbps))
        return Storage(size_gb=size_gb, load_s=stored / (volume_mbps * 1e6), hourly_usd=hourly)

    def on_market(self, ev: Evaluation, storage: Storage) -> Evaluation:
        """``ev`` as priced; on spot, each cluster on the market that is cheaper once interruptions,
        each of which starts the job over, are priced."""
        if not self.inputs.spot:
            return ev
        on_demand_price = self.inputs.columns.price(False)[self.clusters.memory]
        on_demand_hourly = storage.hourly_usd + self.n * (on_demand_price - self.price)
        hazard = workers_hazard(self.inputs, self.clusters)
        return spot_or_on_demand(self.inputs, ev, on_demand_hourly, hazard, checkpointed=False)

    def unrunnable(self, storage: Storage, ram_bytes: np.ndarray, too_large: Unrunnable) -> np.ndarray:
        """Each cluster's reason it cannot run (FEASIBLE if none): no price, ``too_large`` when a
        worker's ``ram_bytes`` exceed what its RAM leaves after the OS, or a volume over its type's limit."""
        free_gib = self.inputs.columns.memory_gib[self.clusters.memory] - self.inputs.coefficients.os_reserve_gib
        return first_unrunnable(
            {
                Unrunnable.NO_PRICE: ~np.isfinite(self.price),
                too_large: ram_bytes / GIB > free_gib,
                Unrunnable.VOLUME_TOO_LARGE: storage.size_gb > self.inputs.volume.max_size_gb,
            }
        )
