"""``RemoteGraphStore``: PyG's ``GraphStore`` over RemoteGNN datasets, local or served.

Each dataset is one edge type (``None`` for a homogeneous graph; see ``groups``). Its edges come
back in any layout straight from the dataset, never converted on the client: ``coo`` is (source,
target) in edge-id order, ``csr`` is (rowptr, col) and ``csc`` is (row, colptr), as PyG defines
them. ``get_all_edge_attrs`` lists each dataset edge type once, as COO: COO positions are the
original edge ids, so PyG's own conversions (``csc()``, ``csr()``) report correct edge ids through
their permutation. A native CSC/CSR's positions are not edge ids.

Sampling never needs the structure on the client: ``RemoteNeighborSampler`` calls ``sample``,
which the dataset's process runs (this process for a local store, the server for a connected one).

Local stores also hold edge indices put by the user, in RAM, for edge types no dataset provides
(PyG's loaders add them to batches; the server-side sampler cannot walk them). A dataset's edge
type can be neither replaced nor removed: the sampler walks the dataset's CSC, and an edge index
in RAM that said otherwise would make ``get_edge_index`` and the batches disagree.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
import torch
from torch_geometric.data import EdgeAttr, GraphStore
from torch_geometric.data.graph_store import EdgeLayout

from foundation.errors import UsageError
from remotegnn.pyg.errors import ReadOnlyStoreError
from remotegnn.pyg.groups import Source, open_local, open_remote
from remotegnn.sampling import SampledSubgraph
from remotegnn.sampling.sampler import check_fanouts


def fanouts(num_neighbors) -> list[int]:
    """Checked fanouts (one per hop, positive or -1), refused with PyG's ValueError."""
    try:
        return [int(f) for f in check_fanouts(num_neighbors)]
    except UsageError as exc:
        raise ValueError(str(exc)) from None


def _name(edge_type: Hashable) -> str:
    return "the edge index" if edge_type is None else f"edge type {edge_type!r}"


class RemoteGraphStore(GraphStore):
    """Edge indices of RemoteGNN datasets behind PyG's ``GraphStore`` interface, with server-side
    sampling. Build one with ``local(datasets)`` or ``connect(addresses)``; picklable like
    ``RemoteFeatureStore``.

    Args:
        sources: Each edge type's (None for a homogeneous graph) opened dataset or store-server
            connection, as ``local`` and ``connect`` open them.
        writable: Whether ``put_edge_index`` and ``remove_edge_index`` may change the store (a
            store over store servers is read-only).
    """

    def __init__(self, sources: Mapping[Hashable, Source] | None = None, *, writable: bool = True):
        super().__init__()
        self._sources = dict(sources or {})
        self._writable = writable
        self._overlay: dict[tuple[Hashable, EdgeLayout], tuple[EdgeAttr, tuple[torch.Tensor, torch.Tensor]]] = {}

    @classmethod
    def local(cls, datasets=None) -> RemoteGraphStore:
        """A store over dataset directories: one path (homogeneous, edge type None) or
        ``{edge_type: path}``; ``None`` starts empty (edge indices come from ``put_edge_index``)."""
        return cls(open_local(datasets if datasets is not None else {}), writable=True)

    @classmethod
    def connect(cls, addresses, *, timeout_s: float = 60.0) -> RemoteGraphStore:
        """A read-only store over store servers: ``"host:port"`` or ``{edge_type: "host:port"}``."""
        return cls(open_remote(addresses, timeout_s=timeout_s), writable=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._sources}, overlay={sorted(str(k) for k, _ in self._overlay)})"

    @property
    def dataset_edge_types(self) -> list[Hashable]:
        """Edge types backed by a dataset: the ones ``sample`` can walk."""
        return list(self._sources)

    def _source(self, edge_type: Hashable) -> Source:
        if edge_type not in self._sources:
            known = ", ".join(repr(t) for t in self._sources) or "none"
            raise KeyError(f"no dataset backs {_name(edge_type)} (dataset edge types: {known})")
        return self._sources[edge_type]

    # -- edge indices ---------------------------------------------------------------------------
    def get_all_edge_attrs(self) -> list[EdgeAttr]:
        attrs = [
            EdgeAttr(edge_type, EdgeLayout.COO, is_sorted=False, size=(source.info.num_nodes, source.info.num_nodes))
            for edge_type, source in self._sources.items()
        ]
        return attrs + [attr for attr, _ in self._overlay.values()]

    def _get_edge_index(self, edge_attr: EdgeAttr) -> tuple[torch.Tensor, torch.Tensor]:
        stored = self._overlay.get((edge_attr.edge_type, edge_attr.layout))
        if stored is not None:
            return stored[1]
        if edge_attr.edge_type not in self._sources:
            known = ", ".join(f"{attr.edge_type!r} ({attr.layout.value})" for attr in self.get_all_edge_attrs())
            raise KeyError(
                f"{_name(edge_attr.edge_type)} in layout {edge_attr.layout.value} is not in the store "
                f"(it holds: {known or 'nothing'})"
            )
        row, col = self._sources[edge_attr.edge_type].edges(edge_attr.layout.value)
        return torch.from_numpy(row), torch.from_numpy(col)

    def _require_writable(self, action: str, edge_type: Hashable) -> None:
        if not self._writable:
            raise ReadOnlyStoreError(
                f"cannot {action} {_name(edge_type)}: this store reads from a store server "
                f"and is read-only (build a writable one with RemoteGraphStore.local)"
            )
        if edge_type in self._sources:
            raise ReadOnlyStoreError(
                f"cannot {action} {_name(edge_type)}: it is the structure of a read-only "
                f"dataset, which the sampler walks; put other edge types instead"
            )

    def _put_edge_index(self, edge_index, edge_attr: EdgeAttr) -> bool:
        self._require_writable("put", edge_attr.edge_type)
        row, col = (torch.as_tensor(part) for part in edge_index)
        self._overlay[(edge_attr.edge_type, edge_attr.layout)] = (edge_attr, (row, col))
        return True

    def _remove_edge_index(self, edge_attr: EdgeAttr) -> bool:
        self._require_writable("remove", edge_attr.edge_type)
        return self._overlay.pop((edge_attr.edge_type, edge_attr.layout), None) is not None

    # -- sampling -------------------------------------------------------------------------------
    def sample(
        self, edge_type: Hashable, seeds: np.ndarray, num_neighbors: list[int], replace: bool, keys: tuple[int, ...]
    ) -> SampledSubgraph:
        """A k-hop neighbourhood of ``seeds`` over a dataset edge type, drawn where the data lives
        with the random stream of ``keys`` (the same keys give the same sample anywhere)."""
        seeds = np.ascontiguousarray(seeds, dtype=np.int64)
        return self._source(edge_type).sample(seeds, fanouts(num_neighbors), replace, keys)
