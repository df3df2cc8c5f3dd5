"""What each data machine copies at staging and reads at start-up, by the workload's shard layout.

Rows are dealt to the k memory machines in blocks of consecutive rows (``contracts.shards``):
striped (blocks of about 64 MiB), range (one block each) or modulo (blocks of one row). A machine
fills its caches (its own memory cache and its share of the learner's) from its volume, and a fill
reads whole read-ahead windows of w rows, so what it reads depends on how its rows lie in what
its volume holds.

A machine's fill needs a share f of its rows (the hottest, taken as spread evenly over its rows:
striped blocks dealt in turn spread them even where ids cluster hot rows together). Its rows fill
a share t of the windows it reads from, a share rho = 1 / (k t) of each window's rows being its
own; a window is read unless none of its rows is needed, so the machine reads

    r = t x (1 - (1 - f x rho)^w)    of the feature file.

- striped, range: staging copies each machine its own part, so its windows hold its rows alone:
  t = its part's share of the file (1/k, the largest part's where parts differ by a block) and
  rho ~ 1, so r ~ (1/k)(1 - (1 - f)^w): its own part and, within it, only the windows its hot
  rows need. (On a whole copy of the file a window overhanging a block's edge reads at most one
  window a block more: 0.2% of a 64 MiB block.)
- modulo: every machine's rows are spread over the whole file (t = 1, rho = 1/k), so
  r = 1 - (1 - f/k)^w: nearly the whole file once its caches hold a few percent.
- one machine holding every row (k = 1, any layout): r = 1 - (1 - f)^w.

Staging copies each data machine the structure and the feature rows it holds in file order: its
own part under striped and range (the largest part, which sizes every machine's volume), the whole
feature file under modulo (its rows lie all over it) and to a machine that holds every row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from contracts.profile import DatasetProfile
from contracts.shards import READAHEAD_BYTES, ShardLayout, ShardLayoutName


def window_rows(profile: DatasetProfile) -> float:
    """w: feature rows one read-ahead window holds (at least one)."""
    return max(1.0, READAHEAD_BYTES / profile.row_bytes)


def largest_part_rows(layout: ShardLayout) -> int:
    """Rows of the largest part: machine 0's, which gets the first of every k blocks (the last
    block may be short, and is then machine 0's only if the blocks come out one past a round)."""
    rows, block, count = layout.num_nodes, layout.block_rows, layout.count
    blocks = -(-rows // block)
    mine = -(-blocks // count)
    short = blocks * block - rows if (blocks - 1) % count == 0 else 0
    return mine * block - short


@dataclass(frozen=True)
class ShardShares:
    """For one layout, per number of data machines k (index k of each table; index 0, a single
    machine's count, as k = 1), what one data machine's start-up fill and staging touch."""

    window_share: np.ndarray  # t: share of the feature file's windows it reads from
    own_density: np.ndarray  # rho: share of those windows' rows that are its own
    staged_bytes: np.ndarray  # bytes staged on its volume: structure + the feature rows it holds


def read_share(window_share: Any, own_density: Any, fraction: Any, window: float) -> Any:
    """r = t x (1 - (1 - f x rho)^w): the share of the feature file a data machine reads at
    start-up to fill caches holding ``fraction`` of its rows (scalars or arrays)."""
    return window_share * (1.0 - (1.0 - fraction * own_density) ** window)


def shard_shares(layout: ShardLayoutName, profile: DatasetProfile, max_machines: int) -> ShardShares:
    """The tables for k = 1 .. ``max_machines`` data machines (k = 0 repeats k = 1's figures)."""
    size = max(1, max_machines) + 1
    share, density, staged = np.ones(size), np.ones(size), np.full(size, float(profile.structure_bytes))
    for k in range(1, size):
        if layout == "modulo" or k == 1:
            # The form it was always priced in (which, at k = 1, equals every layout's).
            share[k], density[k] = 1.0, 1.0 / k
            staged[k] += profile.feature_bytes
            continue
        rows = largest_part_rows(ShardLayout.of(layout, k, profile.feature_rows, profile.row_bytes))
        share[k] = rows / profile.feature_rows
        density[k] = 1.0 / (k * share[k])
        staged[k] += rows * profile.row_bytes
    share[0], density[0], staged[0] = share[1], density[1], staged[1]
    return ShardShares(window_share=share, own_density=density, staged_bytes=staged)
