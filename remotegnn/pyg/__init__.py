"""PyG's remote backend over RemoteGNN: ``RemoteFeatureStore`` and ``RemoteGraphStore`` (PyG's
``FeatureStore`` / ``GraphStore``), ``RemoteNeighborSampler`` (sampling on the server), and the
store server they talk to (``remotegnn.pyg.server``). See docs/remotegnn.md, section 10.

The names are imported on first use (PEP 562) so that the server, which needs neither torch nor
torch_geometric, starts without loading them (several seconds and hundreds of MB on a memory
machine).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "RemoteFeatureStore": "remotegnn.pyg.feature_store",
    "RemoteGraphStore": "remotegnn.pyg.graph_store",
    "RemoteNeighborSampler": "remotegnn.pyg.sampler",
    "StoreServer": "remotegnn.pyg.server",
    "run_server": "remotegnn.pyg.server",
    "ReadOnlyStoreError": "remotegnn.pyg.errors",
    "StoreConnectionError": "remotegnn.pyg.errors",
    "StoreServerError": "remotegnn.pyg.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'remotegnn.pyg' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
