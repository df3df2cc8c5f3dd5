"""A session's caches, chosen together on the memory side: the learner's (rows never sent), in two
tiers, and the memory machine's (rows never read from the volume).

The learner's rows are chosen first, from all nodes: the hottest go to its device (its GPU's
memory, so they never cross PCIe either), the next to its RAM. The memory cache then ranks what
is left, so no two caches hold the same row (the planner's pipeline model assumes exactly this). Both
rankings come from one ``Rankings`` of the session's seeds, so presampling runs at most once and
``auto`` scores both caches on the same probe epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from remotegnn.cache import FeatureCache
from remotegnn.cache.learner import held_mask
from remotegnn.cache.policy import Rankings
from remotegnn.precision import wire_name, wire_numpy_dtype
from remotegnn.server.options import PipelineOptions
from remotegnn.server.shard import Shard
from remotegnn.store import GraphDataset


class CacheReport(BaseModel):
    """What a session's caches hold (``auto`` resolved to the policy it chose)."""

    wire_dtype: str = Field(description="the dtype feature rows travel in")
    learner_policy: str
    learner_rows: int = Field(description="rows the learner holds in RAM (never sent)")
    learner_bytes: int
    device_rows: int = Field(0, description="rows the learner holds on its device (never sent nor copied)")
    device_bytes: int = 0
    memory_policy: str
    memory_rows: int = Field(description="rows this memory rank holds in RAM")
    memory_bytes: int

    def _device(self) -> str:
        return f" + device {self.device_rows:,} rows ({self.device_bytes / 1e9:.2f} GB)" if self.device_rows else ""

    def line(self) -> str:
        return (
            f"wire {self.wire_dtype} | learner cache {self.learner_rows:,} rows ({self.learner_policy}, "
            f"{self.learner_bytes / 1e9:.2f} GB){self._device()} | memory cache {self.memory_rows:,} rows "
            f"({self.memory_policy}, {self.memory_bytes / 1e9:.2f} GB)"
        )


@dataclass
class SessionCaches:
    """The learner's node sets (sorted; the memory rank skips these rows): in its RAM and on its
    device, their mask, the memory cache."""

    wire_dtype: np.dtype
    learner_nodes: np.ndarray
    device_nodes: np.ndarray
    held: np.ndarray  # bool per node, set for both tiers, or empty when the learner holds nothing
    memory: FeatureCache
    report: CacheReport


def build_caches(
    dataset: GraphDataset,
    options: PipelineOptions,
    seeds: np.ndarray,
    shard: Shard = Shard(),
    *,
    fill_memory: bool = True,
) -> SessionCaches:
    """Both caches of a session over ``seeds`` (each memory rank caches its own rows of the
    memory ranking within its own ``cache_bytes``; the learner's set is the same on every rank).
    ``fill_memory=False``: the memory cache's rows are read later, in the sweep that reads the
    learner's share (``FeatureCache.claim_unread``)."""
    meta = dataset.meta
    wire = wire_numpy_dtype(options.wire_dtype, meta.feature_dtype)
    rankings = Rankings(dataset, seeds, tuple(options.num_neighbors), options.batch_size, options.seed + 1)
    row_bytes = meta.feature_dim * wire.itemsize
    device_capacity = min(options.device_cache_bytes // row_bytes, meta.num_nodes)
    learner_capacity = min(options.learner_cache_bytes // row_bytes, meta.num_nodes - device_capacity)
    learner_policy, ranking = rankings.choose(options.learner_cache_policy, device_capacity + learner_capacity)
    device_nodes = np.sort(ranking[:device_capacity]).astype(np.int64)
    learner_nodes = np.sort(ranking[device_capacity : device_capacity + learner_capacity]).astype(np.int64)
    held = held_mask(np.concatenate([device_nodes, learner_nodes]), meta.num_nodes)
    memory_capacity = options.cache_bytes // meta.row_bytes if options.cache_policy != "none" else 0
    memory_policy, ranking = rankings.choose(
        options.cache_policy, memory_capacity * shard.count, exclude=held if len(held) else None
    )
    memory = FeatureCache.build(
        dataset, options.cache_bytes, shard.own_nodes(ranking), policy=memory_policy, progress=False, fill=fill_memory
    )
    report = CacheReport(
        wire_dtype=wire_name(wire),
        learner_policy=learner_policy,
        learner_rows=len(learner_nodes),
        learner_bytes=len(learner_nodes) * row_bytes,
        device_rows=len(device_nodes),
        device_bytes=len(device_nodes) * row_bytes,
        memory_policy=memory_policy,
        memory_rows=memory.capacity,
        memory_bytes=memory.rows.nbytes,
    )
    return SessionCaches(wire, learner_nodes, device_nodes, held, memory, report)
