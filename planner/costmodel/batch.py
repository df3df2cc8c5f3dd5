"""Expected size of one sampled mini-batch, from the profile's degree and access skew.

Hop h samples min(fanout, mean in-degree) neighbours per frontier node. Distinct nodes come from
the cache curve read as an access distribution (hubs are drawn again and again), which is why a
skewed graph's batches are far smaller than the product of the fanouts.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.costmodel.workload import Workload
from planner.datasets.profile import DatasetProfile

NODE_ID_BYTES = 8  # n_id and labels travel as int64
EDGE_WIRE_BYTES = 3 * 8  # edge_index (2 x int64) and e_id (int64)


@dataclass(frozen=True)
class BatchShape:
    nodes_per_hop: tuple[float, ...]  # distinct nodes first reached at each hop (hop 0 = seeds)
    edges_per_hop: tuple[float, ...]  # sampled edges at each hop (hop 1..L)
    batches_per_epoch: int
    row_bytes: int

    @property
    def nodes(self) -> float:
        return sum(self.nodes_per_hop)

    @property
    def edges(self) -> float:
        return sum(self.edges_per_hop)

    @property
    def feature_bytes(self) -> float:
        return self.nodes * self.row_bytes

    @property
    def wire_bytes(self) -> float:
        """Bytes of one batch on the wire: features, ids and labels per node, ids per edge."""
        return self.nodes * (self.row_bytes + 2 * NODE_ID_BYTES) + self.edges * EDGE_WIRE_BYTES


def estimate_batch(profile: DatasetProfile, workload: Workload) -> BatchShape:
    seeds = min(workload.batch_size, profile.num_train)
    curve = profile.curve("degree")  # sampling follows edges: degree skew is the access distribution
    degree = profile.avg_degree
    nodes = [float(seeds)]
    edges: list[float] = []
    drawn = float(seeds)
    reached = float(seeds)
    frontier = float(seeds)
    for fanout in workload.fanouts:
        per_node = degree if fanout == -1 else min(float(fanout), degree)
        hop_edges = frontier * per_node
        drawn += hop_edges
        distinct = max(reached, min(float(profile.num_nodes), float(curve.expected_distinct(drawn, profile.num_nodes))))
        frontier = distinct - reached
        reached = distinct
        edges.append(hop_edges)
        nodes.append(frontier)
    batches = -(-profile.num_train // workload.batch_size)
    return BatchShape(tuple(nodes), tuple(edges), batches, profile.row_bytes)
