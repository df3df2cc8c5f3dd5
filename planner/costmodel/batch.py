"""Expected size of one sampled mini-batch: measured when the profile has it, else estimated.

Every volume and network figure scales with a batch's node count, so the rules go from most to
least faithful:

1. Measured: the profile holds a ``MeasuredBatch`` for exactly the workload's fanouts and batch
   size (``remotegnn profile`` samples real batches): its mean nodes and edges per hop are used.
2. Degree histogram: hop h samples E[min(fanout, in-degree)] neighbours per frontier node, the
   expectation over the profile's in-degree histogram. On a skewed graph most nodes have fewer
   neighbours than the fanout, so this is far below min(fanout, mean degree). It takes degrees as
   node-uniform at every hop; nodes reached along edges tend to have higher degree, so deeper hops
   can be underestimated where in- and out-degree go together.
3. Mean degree: without a histogram (the built-in profiles have no per-node data), hop h samples
   min(fanout, mean in-degree) per frontier node, an overestimate on skewed graphs.

In 2 and 3 distinct nodes come from the cache curve read as an access distribution (hubs are drawn
again and again), which is why a skewed graph's batches are far smaller than the product of the
fanouts.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.profile import DatasetProfile
from contracts.workload import Workload

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
    def id_wire_bytes(self) -> float:
        """Bytes of one batch on the wire besides feature rows: ids and labels per node, ids per edge.

        These cross whatever the learner caches: it needs every node's id to find its cached rows.
        """
        return self.nodes * 2 * NODE_ID_BYTES + self.edges * EDGE_WIRE_BYTES

    @property
    def wire_bytes(self) -> float:
        """Bytes of one batch on the wire when every feature row is sent as stored."""
        return self.id_wire_bytes + self.feature_bytes


def estimate_batch(profile: DatasetProfile, workload: Workload) -> BatchShape:
    batches = -(-profile.num_train // workload.batch_size)
    measured = profile.measured_batch(workload.fanouts, workload.batch_size)
    if measured is not None:
        return BatchShape(tuple(measured.nodes_per_hop), tuple(measured.edges_per_hop), batches, profile.row_bytes)
    seeds = min(workload.batch_size, profile.num_train)
    curve = profile.curve("degree")  # sampling follows edges: degree skew is the access distribution
    nodes = [float(seeds)]
    edges: list[float] = []
    drawn = float(seeds)
    reached = float(seeds)
    frontier = float(seeds)
    for fanout in workload.fanouts:
        per_node = neighbours_per_node(profile, fanout)
        hop_edges = frontier * per_node
        drawn += hop_edges
        distinct = max(reached, min(float(profile.num_nodes), float(curve.expected_distinct(drawn, profile.num_nodes))))
        frontier = distinct - reached
        reached = distinct
        edges.append(hop_edges)
        nodes.append(frontier)
    return BatchShape(tuple(nodes), tuple(edges), batches, profile.row_bytes)


def neighbours_per_node(profile: DatasetProfile, fanout: int) -> float:
    """Expected neighbours one frontier node contributes: E[min(fanout, in-degree)] from the
    histogram when the profile has one, else min(fanout, mean degree); -1 samples them all."""
    if profile.in_degree is not None:
        return profile.in_degree.expected_min(fanout)
    degree = profile.avg_degree
    return degree if fanout == -1 else min(float(fanout), degree)
