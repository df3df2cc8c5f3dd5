"""``RemoteFeatureStore``: PyG's ``FeatureStore`` over RemoteGNN datasets, local or served.

Attributes are ``(group, attr)`` pairs: each dataset gives its group ``x`` (features) and ``y``
(labels, -1 = unlabelled); see ``groups`` for how datasets map to groups. Reads go through a
``DatasetSource`` (local: feature cache in RAM, the rest memory-mapped) or a ``ServerSource`` (a
store server), and ``multi_get_tensor`` - what PyG's loaders call once per batch - asks each source
once for all of its attributes: one round trip per server and batch, not one per attribute.

Writes (local stores only) go to an in-RAM overlay over the read-only datasets: ``put_tensor``
with ``index=None`` stores a whole tensor (a new attribute or group, or one that shadows a
dataset's), ``put_tensor`` with rows updates an overlay tensor in place (PyG ``Data``'s rule), and
``remove_tensor`` drops an overlay tensor and hides a dataset attribute. The files never change. A
store connected to a server is read-only: writes raise ``ReadOnlyStoreError`` (a ValueError).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
import torch
from torch_geometric.data import FeatureStore, TensorAttr

from remotegnn.pyg.errors import ReadOnlyStoreError
from remotegnn.pyg.groups import Source, open_local, open_remote
from remotegnn.pyg.indexing import describe, is_whole, rows_of
from remotegnn.pyg.protocol import AttrInfo

Key = tuple[Hashable, str]


class RemoteFeatureStore(FeatureStore):
    """Node features and labels of RemoteGNN datasets behind PyG's ``FeatureStore`` interface.

    Build one with ``local(datasets)`` or ``connect(addresses)``. Picklable: sources pickle as
    their path or address and reopen in the process that unpickles them (DataLoader workers).

    Args:
        sources: Each group's (node type's; None for a homogeneous graph) opened dataset or
            store-server connection, as ``local`` and ``connect`` open them.
        writable: Whether ``put_tensor`` and ``remove_tensor`` may change the store (a store
            over store servers is read-only).
    """

    def __init__(self, sources: Mapping[Hashable, Source] | None = None, *, writable: bool = True):
        super().__init__()
        self._sources = dict(sources or {})
        self._writable = writable
        self._overlay: dict[Key, torch.Tensor] = {}
        self._hidden: set[Key] = set()

    @classmethod
    def local(cls, datasets=None, *, cache_bytes: int = 0, policy: str = "degree") -> RemoteFeatureStore:
        """A writable store over dataset directories: one path (homogeneous, group None) or
        ``{node_type: path}``; ``None`` starts empty (tensors come from ``put_tensor``). Each
        dataset keeps ``cache_bytes`` of its hottest rows by ``policy`` in RAM, built now."""
        sources = open_local(datasets if datasets is not None else {}, cache_bytes=cache_bytes, policy=policy)
        for source in sources.values():
            source.warm()
        return cls(sources, writable=True)

    @classmethod
    def connect(cls, addresses, *, timeout_s: float = 60.0) -> RemoteFeatureStore:
        """A read-only store over store servers: ``"host:port"`` (homogeneous) or
        ``{node_type: "host:port"}``. Every request waits at most ``timeout_s``."""
        return cls(open_remote(addresses, timeout_s=timeout_s), writable=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._sources}, overlay={sorted(map(str, self._overlay))})"

    # -- lookup ---------------------------------------------------------------------------------
    def _find(self, key: Key) -> torch.Tensor | tuple[Source, AttrInfo]:
        """The overlay tensor or (source, spec) behind ``key``; KeyError naming it otherwise."""
        if key in self._overlay:
            return self._overlay[key]
        source = self._sources.get(key[0])
        if source is not None and key not in self._hidden and key[1] in source.info.attrs:
            return source, source.info.attrs[key[1]]
        held = ", ".join(f"{g}/{a}" if g is not None else a for g, a in self._keys()) or "nothing"
        raise KeyError(f"{describe(*key)} is not in the store (it holds: {held})")

    def _keys(self) -> list[Key]:
        keys = [
            (group, attr)
            for group, source in self._sources.items()
            for attr in source.info.attrs
            if (group, attr) not in self._hidden
        ]
        return keys + [key for key in self._overlay if key not in keys]

    def get_all_tensor_attrs(self) -> list[TensorAttr]:
        return [self._tensor_attr_cls.cast(group, attr) for group, attr in self._keys()]

    # -- reads ----------------------------------------------------------------------------------
    def _get_tensor(self, attr: TensorAttr) -> torch.Tensor:
        return self._multi_get_tensor([attr])[0]

    def _multi_get_tensor(self, attrs: list[TensorAttr]) -> list[torch.Tensor]:
        """Overlay tensors are indexed in RAM; dataset rows are read with one call per source.
        Attributes given the same index object share one row array (and one tensor on the wire)."""
        results: dict[int, torch.Tensor] = {}  # by position in attrs: each is filled once
        reads: dict[int, tuple[Source, list[tuple[int, str, np.ndarray, bool]]]] = {}
        rows_by_index: dict[tuple[int, int], tuple[np.ndarray, bool]] = {}
        for position, attr in enumerate(attrs):
            key = (attr.group_name, attr.attr_name)
            found = self._find(key)
            if isinstance(found, torch.Tensor):
                results[position] = _select(found, attr.index, describe(*key))
                continue
            source, spec = found
            cache_key = (id(attr.index), spec.shape[0])
            if cache_key not in rows_by_index:
                rows_by_index[cache_key] = rows_of(attr.index, spec.shape[0], describe(*key))
            rows, single = rows_by_index[cache_key]
            reads.setdefault(id(source), (source, []))[1].append((position, key[1], rows, single))
        for source, items in reads.values():
            arrays = source.read_many([(name, rows) for _, name, rows, _ in items])
            for (position, _, _, single), array in zip(items, arrays):
                tensor = torch.from_numpy(array)
                results[position] = tensor[0] if single else tensor
        return [results[position] for position in range(len(attrs))]

    def _get_tensor_size(self, attr: TensorAttr) -> tuple[int, ...] | None:
        """The selection's shape, None for an unknown attribute (PyG's contract); reads no rows."""
        key = (attr.group_name, attr.attr_name)
        try:
            found = self._find(key)
        except KeyError:
            return None
        shape = tuple(found.shape) if isinstance(found, torch.Tensor) else found[1].shape
        if attr.index is None:
            return shape
        rows, single = rows_of(attr.index, shape[0], describe(*key))
        return shape[1:] if single else (len(rows), *shape[1:])

    # -- writes ---------------------------------------------------------------------------------
    def _require_writable(self, action: str, key: Key) -> None:
        if not self._writable:
            raise ReadOnlyStoreError(
                f"cannot {action} {describe(*key)}: this store reads from a store server "
                f"and is read-only (build a writable one with RemoteFeatureStore.local)"
            )

    def _put_tensor(self, tensor, attr: TensorAttr) -> bool:
        key = (attr.group_name, attr.attr_name)
        self._require_writable("put", key)
        tensor = torch.as_tensor(tensor)
        if is_whole(attr.index):
            self._overlay[key] = tensor
            self._hidden.discard(key)
            return True
        found = self._find(key)
        if not isinstance(found, torch.Tensor):
            raise ValueError(
                f"cannot write rows of {describe(*key)}: it is read from a read-only dataset; "
                f"put the whole tensor (index=None) to replace it in RAM"
            )
        rows, _ = rows_of(attr.index, found.shape[0], describe(*key))
        found[torch.from_numpy(rows)] = tensor.to(found.dtype)
        return True

    def _remove_tensor(self, attr: TensorAttr) -> bool:
        key = (attr.group_name, attr.attr_name)
        self._require_writable("remove", key)
        if not is_whole(attr.index):
            raise ValueError(f"remove_tensor removes a whole tensor; pass index=None to remove {describe(*key)}")
        removed = self._overlay.pop(key, None) is not None
        source = self._sources.get(key[0])
        if source is not None and key[1] in source.info.attrs and key not in self._hidden:
            self._hidden.add(key)
            removed = True
        return removed


def _select(tensor: torch.Tensor, index, what: str) -> torch.Tensor:
    """Rows of an in-RAM tensor, by the same index rules (and errors) as dataset reads."""
    if index is None:
        return tensor
    rows, single = rows_of(index, tensor.shape[0], what)
    selected = tensor[torch.from_numpy(rows)]
    return selected[0] if single else selected
