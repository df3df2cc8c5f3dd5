"""The learner's GPUs: their memory (the model, the batches, the device feature cache) and the GPU
stage's seconds per batch once the host-to-device copy overlaps the step.

**Device memory.** Each training GPU holds what ``contracts.devicecache`` lists (the loader's
``device_cache="auto"`` sizes its cache by the same rule): the CUDA context, the parameters with
their gradients and Adam's moments (``1 + OPTIMIZER_COPIES`` copies), the largest batch's step
(its rows, activations and gradients, edge index: ``largest_step_bytes``), the batches the loader
has already copied ahead (``COPIES_AHEAD``), and ``DEVICE_MARGIN`` of the card. What is left is
the most a device cache may take; ``gpu_cache_gib="auto"`` takes exactly that, and a size above it
makes the cluster unrunnable (``Unrunnable.GPU_CACHE_EXCEEDS_GPU``).

**The copy overlaps the step.** The loader copies each batch's rows from pinned host memory on a
side stream, ``COPIES_AHEAD`` batches before the step that needs them. The copy runs on the GPU's
copy engine, a DMA engine apart from the cores the step runs on, so while the step of batch b runs,
the copies of b + 1 and b + 2 proceed: one batch takes the longer of its step and its copy. The
model takes the whole copy as hidden when it is the shorter (and the step as hidden when the copy
is the longer). Two parts cannot overlap: one batch per epoch (the first copy, which nothing
precedes, or the last step), left out as a few milliseconds against an epoch of hundreds of
batches; and the assembly of ``x`` on the device from the cache's rows and the copied misses, which
runs on the step's stream and is charged as the step's own memory traffic (a gather and a write of
every row). Without a device cache the copied rows are ``x`` itself, so nothing is assembled.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from contracts.devicecache import CUDA_CONTEXT_BYTES, auto_device_cache_bytes
from contracts.layerwidths import layer_dims
from contracts.profile import DatasetProfile
from contracts.workload import Workload
from foundation.units import FLOAT32_BYTES
from planner.costmodel.gnn import model_parameters

COPIES_AHEAD: Final = 2
"""Batches the loader has copied to the device ahead of the step (its side stream's depth)."""
LARGEST_BATCH_FACTOR: Final = 1.25
"""The largest batch of an epoch over the mean one the model estimates. Sampled batches of the
same fanouts differ by the seeds' neighbourhoods; a quarter above the mean keeps the first step
that meets a large batch from running out of memory beside a cache sized for the mean."""
ASSEMBLY_PASSES: Final = 2
"""Bytes of memory traffic per byte of ``x`` assembled from the cache and the copied misses: each
row read once from where it lies and written once into ``x``."""


def parameter_bytes(profile: DatasetProfile, workload: Workload) -> int:
    """Bytes of the GraphSAGE the GPU stage prices (float32): one SAGEConv per hop."""
    classes = profile.num_classes or workload.hidden_dim
    dims = layer_dims(profile.feature_dim, workload.hidden_dim, classes, len(workload.fanouts))
    return FLOAT32_BYTES * model_parameters("sage", dims, heads=1)


def cache_budget_bytes(capacity_bytes: np.ndarray, parameters: int, resident_bytes: float) -> np.ndarray:
    """The most a device cache may take on GPUs of ``capacity_bytes`` each, beside ``parameters``
    bytes of model and ``resident_bytes`` of batches (the largest step and the copies ahead).

    The planner sees no device, so the context and the parameters are what is already allocated
    when the loader opens (``contracts.devicecache``'s rule, which the loader applies to the device
    it has)."""
    free = capacity_bytes - CUDA_CONTEXT_BYTES - parameters
    budget = [auto_device_cache_bytes(int(c), int(f), parameters, resident_bytes) for c, f in zip(capacity_bytes, free)]
    return np.asarray(budget, dtype=float).reshape(np.shape(capacity_bytes))


def resident_batch_bytes(step_bytes: float, copy_bytes_per_batch: float) -> float:
    """Device bytes batches take besides the cache: the largest step, and the copies ahead of it."""
    return LARGEST_BATCH_FACTOR * step_bytes + COPIES_AHEAD * copy_bytes_per_batch


def batch_seconds(step_s: np.ndarray, copy_s: np.ndarray, assembly_s: np.ndarray | float) -> np.ndarray:
    """One batch on one GPU: its step (with the assembly of ``x``) and its copy, overlapped."""
    return np.maximum(step_s + assembly_s, copy_s)
