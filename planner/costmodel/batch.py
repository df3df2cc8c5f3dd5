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
3. Fitted degrees: without a histogram (the built-in profiles have no per-node data), a lognormal
   degree distribution fitted to the mean degree and the degree curve
   (``planner.costmodel.degrees``): a seed contributes E[min(fanout, D)] neighbours with D drawn
   over nodes, a node reached along an edge E[min(fanout, D)] with D size-biased (hubs are reached
   more often). Checked against sampled batches of an R-MAT graph and real graphs (Facebook
   pages, Twitch, Tolokers): sampled edges within 10% on all but the most clustered graph
   (Facebook, +5% to +43%), where the mean degree overestimated them up to 3x. The
   min(fanout, mean degree) this replaces ignored that most nodes of a skewed graph have fewer
   neighbours than the fanout.

In 2 and 3 distinct nodes come from the cache curve read as an access distribution (hubs are drawn
again and again), which is why a skewed graph's batches are far smaller than the product of the
fanouts.

On the wire (``contracts.wirebytes``): in the compact batch encoding a batch's structure costs, per
node, its position and label; per destination (every node but the last hop's), its edge count;
per edge, its source's index into the batch. Edge ids are not sent (the default loader needs none).
When the learner samples its own batches, none of that crosses the link: only the ids of the rows
it lacks, ``REQUEST_ID_BYTES`` each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.profile import DatasetProfile, csr_csc_bytes
from contracts.wirebytes import (
    REQUEST_ID_BYTES,
    compact_edge_bytes,
    compact_node_bytes,
    fanout_count_bytes,
    position_dtype,
)
from contracts.workload import Workload
from planner.costmodel.degrees import LognormalDegrees


@dataclass(frozen=True)
class BatchShape:
    nodes_per_hop: tuple[float, ...]  # distinct nodes first reached at each hop (hop 0 = seeds)
    edges_per_hop: tuple[float, ...]  # sampled edges at each hop (hop 1..L)
    batches_per_epoch: int
    row_bytes: int
    node_wire_bytes: int  # a node's position and label in a compact frame
    count_wire_bytes: int  # a destination's edge count in a compact frame

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
        """Bytes of one compact frame besides feature rows, when the memory machines sample: every
        node's position and label, every destination's edge count, every edge's source index.

        These cross whatever the learner caches: it needs every node's id to find its cached rows.
        Frame headers and credits are ``contracts.wirebytes.batch_overhead_bytes``.
        """
        destinations = self.nodes - self.nodes_per_hop[-1]  # last-hop nodes have no sampled edges
        return (
            self.nodes * self.node_wire_bytes
            + destinations * self.count_wire_bytes
            + self.edges * compact_edge_bytes(self.nodes)
        )

    def request_wire_bytes(self, missing_share: Any) -> Any:
        """Bytes of the row ids the learner asks for when it samples itself: ``missing_share`` of the
        batch's rows (those no cache of its own holds), ``REQUEST_ID_BYTES`` each."""
        return self.nodes * missing_share * REQUEST_ID_BYTES

    @property
    def wire_bytes(self) -> float:
        """Bytes of one compact frame on the wire when every feature row is sent as stored."""
        return self.id_wire_bytes + self.feature_bytes


def learner_csc_bytes(profile: DatasetProfile) -> int:
    """RAM the learner needs to sample its own batches: the CSC alone (int64 pointers, a position
    per edge), half of what ``structure_bytes`` counts for a memory machine's CSR and CSC."""
    index_bytes = position_dtype(profile.num_nodes).itemsize
    return csr_csc_bytes(profile.num_nodes, profile.num_edges, index_bytes) // 2


def _shape(
    profile: DatasetProfile,
    workload: Workload,
    nodes: tuple[float, ...],
    edges: tuple[float, ...],
    batches: int,
) -> BatchShape:
    """A batch of these hops, with the compact encoding's widths for this graph and fanouts."""
    return BatchShape(
        nodes,
        edges,
        batches,
        profile.row_bytes,
        node_wire_bytes=compact_node_bytes(profile.num_nodes, profile.num_classes),
        count_wire_bytes=fanout_count_bytes(workload.fanouts),
    )


def estimate_batch(profile: DatasetProfile, workload: Workload) -> BatchShape:
    batches = -(-profile.num_train // workload.batch_size)
    measured = profile.measured_batch(workload.fanouts, workload.batch_size)
    if measured is not None:
        return _shape(profile, workload, tuple(measured.nodes_per_hop), tuple(measured.edges_per_hop), batches)
    seeds = min(workload.batch_size, profile.num_train)
    curve = profile.curve("degree")  # sampling follows edges: degree skew is the access distribution
    nodes = [float(seeds)]
    edges: list[float] = []
    drawn = float(seeds)
    reached = float(seeds)
    frontier = float(seeds)
    for hop, fanout in enumerate(workload.fanouts):
        per_node = neighbours_per_node(profile, fanout, seeds=hop == 0)
        hop_edges = frontier * per_node
        drawn += hop_edges
        distinct = max(reached, min(float(profile.num_nodes), float(curve.expected_distinct(drawn, profile.num_nodes))))
        frontier = distinct - reached
        reached = distinct
        edges.append(hop_edges)
        nodes.append(frontier)
    return _shape(profile, workload, tuple(nodes), tuple(edges), batches)


def neighbours_per_node(profile: DatasetProfile, fanout: int, *, seeds: bool) -> float:
    """Expected neighbours one frontier node contributes: E[min(fanout, in-degree)] from the
    histogram when the profile has one, else from the degrees fitted to its skew (``seeds``: the
    frontier is the seeds, drawn over nodes; otherwise nodes reached along edges); -1 samples all."""
    if profile.in_degree is not None:
        return profile.in_degree.expected_min(fanout)
    return fitted_degrees(profile).expected_min(fanout, along_edge=not seeds)


def fitted_degrees(profile: DatasetProfile) -> LognormalDegrees:
    """The lognormal degrees of the profile's mean degree and degree curve."""
    return LognormalDegrees.fit(profile.avg_degree, profile.cache_curves["degree"])
