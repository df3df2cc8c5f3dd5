"""``DistributedLinkLoader``: PyG's ``LinkNeighborLoader`` contract, node batches built by the
memory server.

Link prediction scripts swap ``LinkNeighborLoader`` for it and keep the rest: ``edge_label_index``
and ``edge_label`` (default: every edge, labelled 1 when negatives are drawn), negative sampling
("binary" random pairs labelled 0, or "triplet" random destinations per source) and the batch
fields ``edge_label_index``/``edge_label`` or ``src_index``/``dst_pos_index``/``dst_neg_index``,
``input_id`` (the edges' positions) and, with ``disjoint``, ``batch``. Every other argument is
``DistributedGraphLoader``'s (and so ``NeighborLoader``'s and ``DataLoader``'s), with the same fates.

An epoch permutes the supervision edges; batch b is a slice of them plus its negatives, drawn by
(seed, epoch, b), and the nodes sampled around are the batch's endpoints, made unique as PyG does.
The memory server and the learner compute the same batches from the same inputs
(``remotegnn.sampling.links``), so only the node batch crosses the network and the learner adds
the labels.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData

from contracts.dataset import DatasetMeta
from foundation.errors import UsageError
from remotegnn.loader import DistributedGraphLoader
from remotegnn.sampling.links import LinkBatch, NegativeSampling
from remotegnn.server.seeds import LinkSeeds, epoch_order


def negative_sampling(neg_sampling, neg_sampling_ratio) -> NegativeSampling | None:
    """PyG's ``neg_sampling`` (a ``NegativeSampling``, "binary"/"triplet", or a dict) or the older
    ``neg_sampling_ratio`` (binary) as this package's model, or a ``UsageError`` naming it."""
    if neg_sampling_ratio is not None and neg_sampling_ratio != 0:
        if neg_sampling is not None:
            raise UsageError("neg_sampling and neg_sampling_ratio both set the negatives; give one of them")
        neg_sampling = {"mode": "binary", "amount": neg_sampling_ratio}
    if neg_sampling is None:
        return None
    if isinstance(neg_sampling, str):
        neg_sampling = {"mode": neg_sampling}
    elif not isinstance(neg_sampling, dict):  # PyG's NegativeSampling
        if (
            getattr(neg_sampling, "src_weight", None) is not None
            or getattr(neg_sampling, "dst_weight", None) is not None
        ):
            raise UsageError("neg_sampling: src_weight/dst_weight are not supported; negatives are drawn uniformly")
        mode = getattr(neg_sampling, "mode", None)
        neg_sampling = {"mode": getattr(mode, "value", mode), "amount": getattr(neg_sampling, "amount", None)}
    try:
        negative = NegativeSampling(**{k: v for k, v in neg_sampling.items() if v is not None})
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"neg_sampling={neg_sampling!r}: give 'binary' or 'triplet' (and an amount > 0), "
            f"as PyG's NegativeSampling takes ({str(exc).splitlines()[-1].strip()})"
        ) from None
    if negative.mode == "triplet" and negative.amount != int(negative.amount):
        raise UsageError(
            f"neg_sampling: triplet sampling needs a whole number of negatives per edge, not {negative.amount}"
        )
    return negative


def _edges(edge_label_index) -> tuple[tuple[str, str, str] | None, np.ndarray | None]:
    """(edge type, edges [2, M]) from PyG's forms: edges; an edge type; (edge type, edges or None)."""
    if edge_label_index is None:
        return None, None
    if isinstance(edge_label_index, tuple | list) and all(isinstance(v, str) for v in edge_label_index):
        return tuple(edge_label_index), None
    edge_type = None
    if isinstance(edge_label_index, tuple) and len(edge_label_index) == 2:
        edge_type, edge_label_index = tuple(edge_label_index[0]), edge_label_index[1]
        if edge_label_index is None:
            return edge_type, None
    values = edge_label_index.numpy() if isinstance(edge_label_index, torch.Tensor) else np.asarray(edge_label_index)
    if values.ndim != 2 or values.shape[0] != 2 or values.dtype.kind not in "iu":
        raise UsageError(
            "edge_label_index must be an integer tensor of shape [2, num_edges], "
            f"not {values.dtype}{list(values.shape)}"
        )
    return edge_type, values.astype(np.int64)


class DistributedLinkLoader(DistributedGraphLoader):
    """A drop-in ``LinkNeighborLoader`` whose node batches come from a RemoteGNN memory server.

    Args:
        data: As ``DistributedGraphLoader``'s: a ``Data``, a ``HeteroData``, a dataset directory,
            or under ``remotegnn launch`` the memory machines' path (None: ``launch --dataset``'s).
        num_neighbors: Neighbours sampled per hop around each batch's endpoints, as PyG's.
        edge_label_index: The supervision edges: an integer tensor of shape [2, num_edges], an
            edge type, or (edge type, edges or None). Default: every edge.
        edge_label: A label per supervision edge (default: 1 when negatives are drawn). Leave it
            out with triplet negative sampling, as PyG requires.
        edge_label_time: Refused unless None: the dataset format stores no timestamps.
        replace: As ``DistributedGraphLoader``'s: sample with replacement.
        subgraph_type: As ``DistributedGraphLoader``'s: "directional" or "bidirectional".
        disjoint: As ``DistributedGraphLoader``'s: each seed gets its own subgraph.
        temporal_strategy: Refused unless "uniform", as ``DistributedGraphLoader``'s.
        neg_sampling: PyG's ``NegativeSampling``, "binary" (random pairs labelled 0), "triplet"
            (random destinations per source, a whole number per edge) or a dict of its fields;
            negatives are drawn uniformly (``src_weight``/``dst_weight`` are refused).
        neg_sampling_ratio: PyG's older form of binary negatives per edge; give this or
            ``neg_sampling``, not both.
        time_attr: Refused unless None, as ``DistributedGraphLoader``'s.
        weight_attr: As ``DistributedGraphLoader``'s: the edge attribute weighting the draws.
        transform: As ``DistributedGraphLoader``'s: applied to each batch before it is yielded.
        transform_sampler_output: Refused unless None, as ``DistributedGraphLoader``'s.
        is_sorted: A no-op, as ``DistributedGraphLoader``'s.
        filter_per_worker: A no-op, as ``DistributedGraphLoader``'s.
        neighbor_sampler: Refused unless None, as ``DistributedGraphLoader``'s.
        directed: Refused unless True, as ``DistributedGraphLoader``'s.
        **kwargs: Every other argument is ``DistributedGraphLoader``'s (and so
            ``NeighborLoader``'s and ``DataLoader``'s), with the same fates.
    """

    seeds: LinkSeeds  # what ``_seed_source`` returns here
    STATE_LOADER = "link"

    def __init__(
        self,
        data: Data | str | os.PathLike[str] | None,
        num_neighbors,
        edge_label_index=None,
        edge_label: torch.Tensor | None = None,
        edge_label_time=None,
        replace: bool = False,
        subgraph_type: str = "directional",
        disjoint: bool = False,
        temporal_strategy: str = "uniform",
        neg_sampling=None,
        neg_sampling_ratio: float | None = None,
        time_attr: str | None = None,
        weight_attr: str | None = None,
        transform: Callable[[Data], Data] | None = None,
        transform_sampler_output=None,
        is_sorted: bool = False,
        filter_per_worker: bool | None = None,
        neighbor_sampler=None,
        directed: bool = True,
        **kwargs,
    ):
        if edge_label_time is not None:
            raise UsageError(
                "edge_label_time: temporal sampling is not supported: the dataset format stores no timestamps"
            )
        self._negative = negative_sampling(neg_sampling, neg_sampling_ratio)
        self._edge_type, self._edges = _edges(edge_label_index)
        self._typed_data = data if isinstance(data, HeteroData) else None
        if edge_label is not None and self._negative is not None and self._negative.mode == "triplet":
            raise UsageError(
                "edge_label: leave it out with triplet negative sampling, as PyG requires; the batch's "
                "src_index, dst_pos_index and dst_neg_index tell positives from negatives"
            )
        self._labels = None if edge_label is None else torch.as_tensor(edge_label)
        if self._labels is not None and self._negative is not None and self._labels.min() == 0:
            self._labels = self._labels + 1  # as PyG: 0 now means "negative"
        self._disjoint = disjoint
        self._epoch_batches: list[LinkBatch] = []
        super().__init__(
            data,
            num_neighbors,
            input_nodes=None,
            replace=replace,
            subgraph_type=subgraph_type,
            disjoint=disjoint,
            temporal_strategy=temporal_strategy,
            time_attr=time_attr,
            weight_attr=weight_attr,
            transform=transform,
            transform_sampler_output=transform_sampler_output,
            is_sorted=is_sorted,
            filter_per_worker=filter_per_worker,
            neighbor_sampler=neighbor_sampler,
            directed=directed,
            **kwargs,
        )

    def _pipeline_extras(self) -> dict:
        return {"neg_sampling": self._negative} if self._negative is not None else {}

    def _seed_source(self, input_nodes, meta: DatasetMeta, splits) -> LinkSeeds:
        del input_nodes, splits  # a link loader's batches are slices of its edges
        if meta.hetero is not None:
            return self._typed_seeds(meta)
        if self._edge_type is not None:
            raise UsageError("edge_label_index=(edge type, edges) needs a heterogeneous graph; give the edges alone")
        if self._edges is None:
            if self._source is None:
                raise UsageError("edge_label_index: give the edges to train on (a [2, num_edges] tensor)")
            self._edges = self._source.edge_index.numpy().astype(np.int64)  # PyG's default: every edge
        self._check_labels()
        seeds = LinkSeeds(self._edges, self._negative, meta.num_nodes, self._disjoint)
        seeds.check(meta.num_nodes)
        return seeds

    def _typed_seeds(self, meta: DatasetMeta) -> LinkSeeds:
        """A heterogeneous graph's supervision edges of one edge type, in the stored id space."""
        if self._edge_type is None:
            raise UsageError("edge_label_index: on a heterogeneous graph give (edge type, edges) or an edge type")
        assert meta.hetero is not None  # _seed_source sends only heterogeneous graphs here
        self._hetero = self._use_types(meta.hetero)
        if self._edge_type not in self._hetero.edge_keys:
            raise UsageError(
                f"edge_label_index: {self._edge_type!r} is not an edge type of this graph; its edge types are "
                + ", ".join(map(str, self._hetero.edge_keys))
            )
        if self._edges is None:
            if self._typed_data is None:
                raise UsageError("edge_label_index: give the edges of that type (a [2, num_edges] tensor)")
            self._edges = self._typed_data[self._edge_type].edge_index.numpy().astype(np.int64)
        self._check_labels()
        source, _, destination = self._edge_type
        ranges = (self._hetero.id_range(source), self._hetero.id_range(destination))
        for (lo, hi), ids, name in zip(ranges, self._edges, (source, destination), strict=True):
            if ids.size and (ids.min() < 0 or ids.max() >= hi - lo):
                raise UsageError(f"edge_label_index must hold {name} ids in [0, {hi - lo})")
        edges = self._edges + np.array([[ranges[0][0]], [ranges[1][0]]])
        return LinkSeeds(edges, self._negative, meta.num_nodes, self._disjoint, ranges)

    def _check_labels(self) -> None:
        edges = self._edges
        assert edges is not None  # the seed sources set the edges first
        if self._labels is not None and self._labels.shape[:1] != (edges.shape[1],):
            raise UsageError(f"edge_label: one label per edge of edge_label_index ({edges.shape[1]})")

    def _begin_epoch(self, epoch: int) -> None:
        options = self.options
        positions = epoch_order(self.seeds.items, options.seed, epoch, options.shuffle, self._learner)
        self._epoch_batches = self.seeds.batches(
            options.batch_size, options.drop_last, positions, (options.seed, epoch)
        )

    def _decorate(self, batch: Data | HeteroData, index: int) -> None:
        link = self._epoch_batches[index]
        device, positives = self.device, link.positives
        if isinstance(batch, HeteroData):  # PyG puts the link fields on the edge and node types
            assert self._edge_type is not None and self._hetero is not None  # set by _typed_seeds
            source, _, destination = self._edge_type
            edges, sources, destinations = batch[self._edge_type], batch[source], batch[destination]
            endpoints = torch.from_numpy(self._hetero.within_type(link.seeds, link.endpoints)).to(device)
        else:
            del batch.batch_size  # PyG's link batches have none
            edges = sources = destinations = batch
            endpoints = torch.from_numpy(link.endpoints).to(device)
        edges.input_id = torch.from_numpy(link.positions).to(device)
        if self._negative is not None and self._negative.mode == "triplet":
            sources.src_index = endpoints[:positives]
            destinations.dst_pos_index = endpoints[positives : 2 * positives]
            destinations.dst_neg_index = endpoints[2 * positives :].view(positives, -1).squeeze(-1)
        else:
            edges.edge_label_index = endpoints.view(2, -1)
            label = self._labels[torch.from_numpy(link.positions)] if self._labels is not None else None
            if self._negative is not None:
                positive = label if label is not None else torch.ones(positives)
                label = torch.cat([positive, positive.new_zeros((link.negatives, *positive.shape[1:]))])
            if label is not None:
                edges.edge_label = label.to(device)
        if self._disjoint:
            batch.batch = batch.batch % positives
