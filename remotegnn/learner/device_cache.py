"""The learner's device feature cache: the hottest rows resident on the loader's device.

It is the top tier of the learner's cache: the memory side ranks rows once for the session and
the first ``device_cache`` bytes' worth of the ranking live here, the next ``learner_cache`` bytes'
worth in the learner's RAM. Rows held here are neither sent by the memory machines nor copied
from host memory: a batch's hits are gathered on the device, and only the indices of the hits
cross PCIe (4 bytes each where a row is hundreds).

Rows are kept in the wire dtype, the very values the wire would have brought, so a batch is
bit-identical with and without the cache. The node -> row map stays in host memory, where the
batch's ``n_id`` is, so splitting a batch into hits and misses costs no device round trip.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numba
import numpy as np
import torch

from contracts.devicecache import ACTIVATION_BYTES_PER_NODE, auto_device_cache_bytes
from foundation.errors import UsageError
from remotegnn.cache.kernels import empty_slots, move_rows, scatter_rows
from remotegnn.cache.learner import LearnerCache, bits
from remotegnn.precision import BFLOAT16


def as_tensor(array: np.ndarray) -> torch.Tensor:
    """A numpy array as a tensor without a copy (bfloat16 bits become ``torch.bfloat16``)."""
    if array.dtype == BFLOAT16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


@numba.njit(nogil=True, cache=True)
def split_hits(slot, n_id, hit_pos, hit_row, miss_pos):
    """Positions of ``n_id`` the cache holds (with their rows) and those it does not, in order.
    Returns (hits, misses)."""
    hits = misses = 0
    for i in range(n_id.shape[0]):
        s = slot[n_id[i]]
        if s >= 0:
            hit_pos[hits] = i
            hit_row[hits] = s
            hits += 1
        else:
            miss_pos[misses] = i
            misses += 1
    return hits, misses


@dataclass
class Split:
    """One batch's nodes as the device cache sees them (positions into ``n_id``)."""

    hit_pos: np.ndarray  # int64
    hit_row: np.ndarray  # int32: the cache's row of each hit
    miss_pos: np.ndarray  # int64


@dataclass
class DeviceCache:
    """Rows of the device tier on ``rows.device``; ``slot[v]`` (host memory) is v's row, -1 if
    not held. Empty: a cache of no rows, and every batch is all misses."""

    rows: torch.Tensor
    slot: np.ndarray
    host_rows: np.ndarray | None = None  # on a CPU device: the same rows as numpy, for the copy kernels

    @classmethod
    def empty(cls) -> DeviceCache:
        return cls(torch.empty(0, 0), empty_slots(0))

    @classmethod
    def upload(cls, tier: LearnerCache, device: torch.device) -> DeviceCache:
        """The device tier's rows (filled in host memory by the pipeline) moved to ``device``.
        On a CPU device a separate tensor stands in for device memory."""
        if tier.size == 0:
            return cls.empty()
        if device.type == "cpu":  # the tier's own array, no second copy
            return cls(as_tensor(tier.rows), tier.slot, tier.rows)
        return cls(as_tensor(tier.rows).to(device), tier.slot)

    @property
    def size(self) -> int:
        return int(self.rows.shape[0])

    @property
    def nbytes(self) -> int:
        return self.rows.numel() * self.rows.element_size()

    def assemble_on_host(self, misses: np.ndarray, split: Split) -> np.ndarray:
        """``x`` on a CPU device: the misses and the hits placed by the copy kernels (several
        times faster than torch's ``index_copy_`` on a CPU)."""
        assert self.host_rows is not None, "only a CPU device's cache assembles on the host"
        x = np.empty((len(split.hit_pos) + len(split.miss_pos), misses.shape[1]), dtype=misses.dtype)
        scatter_rows(bits(misses), split.miss_pos, bits(x))
        move_rows(bits(self.host_rows), split.hit_row, split.hit_pos, bits(x))
        return x

    def split(self, n_id: np.ndarray) -> Split:
        hit_pos = np.empty(len(n_id), dtype=np.int64)
        hit_row = np.empty(len(n_id), dtype=np.int32)
        miss_pos = np.empty(len(n_id), dtype=np.int64)
        hits, misses = split_hits(self.slot, n_id, hit_pos, hit_row, miss_pos)
        return Split(hit_pos[:hits], hit_row[:hits], miss_pos[:misses])


def device_cache_bytes(
    value, device: torch.device, *, row_bytes: int, has_features: bool, largest_batch_nodes: int
) -> int:
    """The budget for the loader's ``device_cache`` argument: bytes, "auto" or 0/None (off).

    "auto" is ``contracts.devicecache.auto_device_cache_bytes`` over the device's free memory
    now, the parameters already on it (build the loader after ``model.to(device)``) and
    ``ACTIVATION_BYTES_PER_NODE`` for each node of the largest batch the fanouts allow. On a CPU
    device "auto" is 0: host memory is what the learner's RAM cache already uses."""
    if value is None or (value == 0 and not isinstance(value, bool)):
        return 0
    if not has_features:
        raise UsageError(f"device_cache={value!r}: the dataset has no node features to cache; leave device_cache off")
    if value == "auto":
        if device.type != "cuda":
            return 0
        free, total = torch.cuda.mem_get_info(device)
        activations = largest_batch_nodes * (ACTIVATION_BYTES_PER_NODE + row_bytes)
        return auto_device_cache_bytes(total, free, torch.cuda.memory_allocated(device), activations)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(
            f"device_cache={value!r}: give a size in bytes (>= 0), 'auto' (the device memory the model's "
            "training leaves free) or 0 for no device cache"
        )
    total = _device_memory(device)
    if value > total:
        raise UsageError(f"device_cache={value:,} bytes: the device {device} has {total:,}; give less, or 'auto'")
    return value


def _device_memory(device: torch.device) -> int:
    """Bytes of memory ``device`` has (a CPU device: the machine's RAM)."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
