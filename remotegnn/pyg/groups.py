"""How RemoteGNN datasets become PyG groups (node types for features, edge types for structure).

A RemoteGNN dataset is one node set [0, N) with features ``x``, labels ``y`` and one edge set over
it. So a store is built from one source per group: a single path or address is the homogeneous
graph (group ``None``, PyG's name for it), and a mapping ``{group: path or address}`` gives several
node types (feature store) or edge types (graph store). Sources that serve the same dataset share
nothing but the files; the feature store's cache belongs to the feature store.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping

from remotegnn.pyg.client import ServerSource
from remotegnn.pyg.dataset import DatasetSource

Source = DatasetSource | ServerSource


def by_group(value, what: str) -> dict[Hashable, str | os.PathLike[str]]:
    """``{None: value}`` for one path or address, a copy of a mapping, TypeError for anything else."""
    if isinstance(value, (str, os.PathLike)):
        return {None: value}
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(
        f"{what}: give one path or address (a homogeneous graph) or a mapping "
        f"{{group: path or address}}, not {type(value).__name__}"
    )


def open_local(datasets, *, cache_bytes: int = 0, policy: str = "degree") -> dict[Hashable, DatasetSource]:
    return {
        group: DatasetSource(path, cache_bytes=cache_bytes, policy=policy)
        for group, path in by_group(datasets, "datasets").items()
    }


def open_remote(addresses, *, timeout_s: float) -> dict[Hashable, ServerSource]:
    """Connect now and fetch each server's description, so a wrong address fails here rather than
    in the first batch."""
    sources = {
        group: ServerSource(str(address), timeout_s=timeout_s)
        for group, address in by_group(addresses, "addresses").items()
    }
    for source in sources.values():
        source.info  # noqa: B018 - fetched for its side effect
    return sources
