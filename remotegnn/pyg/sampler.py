"""``RemoteNeighborSampler``: a PyG ``BaseSampler`` whose sampling runs where the graph lives.

PyG's own ``NeighborSampler`` calls ``graph_store.csc()`` when it is built, pulling the whole
structure into the training process; that defeats a remote store. This sampler sends each batch's
seeds to ``RemoteGraphStore.sample`` (the store server, or the local dataset) and receives only the
sampled subgraph, in PyG's ``SamplerOutput`` conventions (seeds first, then each hop's new nodes;
``row`` the neighbour, ``col`` the target, both local; ``edge`` original edge ids).

Random keys, and how to get ``DistributedGraphLoader``'s batches: RemoteGNN draws a batch from the
keys (seed, epoch, batch). ``NodeLoader`` tells a sampler neither the epoch nor the batch number,
so this sampler takes ``epoch`` from ``set_epoch`` (call it before each epoch, as with torch's
``DistributedSampler``; forked DataLoader workers copy the sampler when an epoch starts, unless
``persistent_workers=True``) and derives the batch number from the batch's first input id:
``batch = input_id[0] // batch_size``. With ``input_nodes`` given as node ids (or None) and
``shuffle=False``, NodeLoader's input ids are positions, so batch b starts at b * batch_size and
this is exactly the pipeline's batch number: pass the loader's ``batch_size`` and ``seed`` and
NodeLoader yields ``DistributedGraphLoader``'s batches. The default ``batch_size=1`` makes the key
the first input id itself, distinct for every batch of an epoch in any order (``shuffle=True``).
With a boolean mask PyG reports global node ids as input ids, so pass ``mask.nonzero().view(-1)``
to get positions.
"""

from __future__ import annotations

from collections.abc import Hashable

import torch
from torch_geometric.sampler import (
    BaseSampler,
    EdgeSamplerInput,
    HeteroSamplerOutput,
    NegativeSampling,
    NodeSamplerInput,
    SamplerOutput,
)

from remotegnn.pyg.graph_store import RemoteGraphStore, fanouts

_ANY = object()


class RemoteNeighborSampler(BaseSampler):
    """Uniform k-hop neighbour sampling over one dataset edge type of a ``RemoteGraphStore``.

    ``edge_type`` may be left out when the store has one dataset edge type; a typed one must lead
    from a node type to itself (each hop's neighbours are the next hop's targets). Batches of a
    homogeneous store come back as ``SamplerOutput`` (``Data`` batches), of a typed edge as
    ``HeteroSamplerOutput`` (``HeteroData`` batches holding that node type and edge type).
    Picklable: it holds the store, whose connections reopen in each DataLoader worker.

    Args:
        graph_store: The ``RemoteGraphStore`` whose datasets or store servers sample.
        num_neighbors: Neighbours sampled per hop, as PyG's.
        replace: Sample neighbours with replacement.
        seed: Fixes the draws (an integer, 0 or more), with the epoch (``set_epoch``) and the
            batch number.
        batch_size: The loader's batch size: a batch's number in its random keys is its first
            input id divided by it.
        edge_type: The dataset edge type to walk; may be left out when the store has one.
    """

    def __init__(
        self,
        graph_store: RemoteGraphStore,
        num_neighbors,
        *,
        replace: bool = False,
        seed: int = 0,
        batch_size: int = 1,
        edge_type: Hashable = _ANY,
    ):
        if not isinstance(graph_store, RemoteGraphStore):
            raise TypeError(
                f"RemoteNeighborSampler samples through a RemoteGraphStore, not {type(graph_store).__name__}"
            )
        if batch_size < 1 or seed < 0:
            raise ValueError(f"batch_size must be >= 1 and seed >= 0 (got {batch_size} and {seed})")
        self.graph_store = graph_store
        self.num_neighbors = fanouts(num_neighbors)
        self.replace, self.seed, self.batch_size, self.epoch = bool(replace), int(seed), int(batch_size), 0
        self.edge_type = self._resolve(edge_type)

    def _resolve(self, edge_type: Hashable) -> tuple[Hashable, ...] | None:
        known = self.graph_store.dataset_edge_types
        if edge_type is _ANY:
            if len(known) != 1:
                raise ValueError(
                    f"the store has {len(known)} dataset edge types ({', '.join(map(repr, known))}); "
                    "pass edge_type= to say which one to sample"
                )
            edge_type = known[0]
        if edge_type not in known:
            raise KeyError(
                f"edge type {edge_type!r} has no dataset to sample (dataset edge types: "
                f"{', '.join(map(repr, known)) or 'none'})"
            )
        if edge_type is None:
            return None
        if not isinstance(edge_type, tuple) or len(edge_type) != 3 or edge_type[0] != edge_type[-1]:
            raise ValueError(
                f"edge type {edge_type!r}: k-hop sampling over one edge type needs a (node type, "
                "relation, same node type) triple"
            )
        return edge_type

    def set_epoch(self, epoch: int) -> None:
        """The epoch in the random keys (seed, epoch, batch)."""
        self.epoch = int(epoch)

    def keys_for(self, inputs: NodeSamplerInput) -> tuple[int, int, int]:
        """(seed, epoch, batch) for a batch: batch = input_id[0] // batch_size (module docstring)."""
        if inputs.input_id is None or inputs.input_id.numel() == 0:
            raise ValueError(
                "RemoteNeighborSampler derives a batch's random keys from its input ids; this NodeSamplerInput has none"
            )
        return self.seed, self.epoch, int(inputs.input_id[0]) // self.batch_size

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs) -> SamplerOutput | HeteroSamplerOutput:
        if index.time is not None:
            raise ValueError("RemoteNeighborSampler does not sample by time (RemoteGNN datasets carry no timestamps)")
        node_type = None if self.edge_type is None else self.edge_type[-1]
        if index.input_type != node_type:
            raise ValueError(
                f"the loader's input nodes are of type {index.input_type!r}, but this sampler walks "
                f"edge type {self.edge_type!r}, whose targets are {node_type!r}"
            )
        sub = self.graph_store.sample(
            self.edge_type, index.node.numpy(), self.num_neighbors, self.replace, self.keys_for(index)
        )
        node, edge = torch.from_numpy(sub.n_id), torch.from_numpy(sub.e_id)
        row, col = torch.from_numpy(sub.edge_index[0]), torch.from_numpy(sub.edge_index[1])
        metadata = (index.input_id, index.time)
        if self.edge_type is None:
            return SamplerOutput(
                node=node,
                row=row,
                col=col,
                edge=edge,
                num_sampled_nodes=sub.num_sampled_nodes,
                num_sampled_edges=sub.num_sampled_edges,
                metadata=metadata,
            )
        edge_type = self.edge_type
        return HeteroSamplerOutput(
            node={node_type: node},
            row={edge_type: row},
            col={edge_type: col},
            edge={edge_type: edge},
            num_sampled_nodes={node_type: sub.num_sampled_nodes},
            num_sampled_edges={edge_type: sub.num_sampled_edges},
            metadata=metadata,
        )

    def sample_from_edges(
        self, index: EdgeSamplerInput, neg_sampling: NegativeSampling | None = None
    ) -> SamplerOutput | HeteroSamplerOutput:
        raise NotImplementedError(
            "RemoteNeighborSampler samples from seed nodes only (NodeLoader); "
            "link sampling (LinkNeighborLoader) is not built"
        )
