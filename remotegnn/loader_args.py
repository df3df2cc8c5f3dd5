"""What ``DistributedGraphLoader`` does with each argument of PyG's ``NeighborLoader`` and torch's
``DataLoader``.

Every one of them has one of three fates: it works with PyG's meaning; it is accepted and does
nothing, where it has no meaning because the memory server builds the batches (``NO_OPS``); or it
is refused with a ``UsageError`` that names it and says what to do instead (``REFUSED``,
``REFUSED_DATALOADER``). These tables are the one place that decides which, so a script written
for ``NeighborLoader`` gets a sentence about its own argument, never an error from inside.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from typing import Any

import torch

from foundation.errors import UsageError
from remotegnn.server import ServerOptions

DEFAULT_TIMEOUT_S = 60.0
"""The longest wait for a batch when ``timeout`` is 0 (DataLoader's "forever"): a memory
machine that died would otherwise hang the training job without a word."""
DEFAULT_PREFETCH = 2
"""Batches the receiver thread builds ahead when ``prefetch_factor`` is not given (DataLoader's
default)."""
SEED_RANGE = 2**63
"""Sampling seeds are non-negative int64; a generator's 64-bit seed is folded into that range."""

NO_OPS = {
    "num_workers": "the memory server's batch creators and vector loaders do that work; size them with "
    "server=ServerOptions(batch_creators=..., vector_loaders=...)",
    "persistent_workers": "the memory server's processes already live as long as the loader",
    "is_sorted": "a dataset stores its edges sorted by target already",
    "filter_per_worker": "batches are assembled in the loader's receiver thread, off the training loop, "
    "which is what filter_per_worker=True buys",
}
"""Accepted and ignored, with why."""

_TEMPORAL = (
    "temporal sampling is not supported: the dataset format stores no timestamps; pass the nodes "
    "valid at that time as input_nodes"
)
REFUSED = {
    "input_time": (None, _TEMPORAL),
    "time_attr": (None, _TEMPORAL),
    "temporal_strategy": ("uniform", _TEMPORAL),
    "transform_sampler_output": (
        None,
        "sampling runs on the memory server, so no SamplerOutput reaches this process; change the "
        "batch with transform= instead",
    ),
    "neighbor_sampler": (
        None,
        "a sampler object runs in this process, while here sampling runs on the memory server; give "
        "its options (num_neighbors, replace, disjoint, weight_attr) instead",
    ),
    "worker_init_fn": (
        None,
        "no DataLoader worker processes run here (the memory server builds the batches); do "
        "per-process set-up before the training loop",
    ),
    "directed": (
        True,
        "directed=False (deprecated in PyG for subgraph_type='induced') is not supported; use "
        "subgraph_type='directional' or 'bidirectional'",
    ),
}
"""NeighborLoader arguments refused unless left at their default: name -> (default, why and
what instead)."""

REFUSED_DATALOADER = {
    "collate_fn": "the loader builds PyG batches itself; change them with transform=",
    "sampler": "the seeds' order comes from shuffle= and seed=; pass the seeds you want as input_nodes",
    "batch_sampler": "the seeds' order comes from shuffle=, batch_size= and seed=; pass the seeds as input_nodes",
    "multiprocessing_context": "no DataLoader worker processes run here",
    "pin_memory_device": "batches are copied to the loader's device=; pass device='cuda:N'",
    "in_order": "batches always arrive in order",
}
"""DataLoader keyword arguments NeighborLoader would forward, refused with why."""

SUBGRAPH_TYPES = ("directional", "bidirectional")
KNOWN = [
    "num_neighbors",
    "input_nodes",
    "replace",
    "subgraph_type",
    "disjoint",
    "weight_attr",
    "transform",
    "batch_size",
    "shuffle",
    "drop_last",
    "pin_memory",
    "prefetch_factor",
    "generator",
    "timeout",
    "server",
    "seed",
    "device",
    "zero_copy",
    "volume_limits",
    "transport",
    "learner_cache",
    "learner_cache_policy",
    "device_cache",
    "wire_dtype",
    "keep_wire_dtype",
]
"""The loader's own parameter names (for "did you mean")."""


def check_refused(given: Mapping[str, Any]) -> None:
    """A ``UsageError`` for the first argument of ``REFUSED`` set to anything but its default."""
    for name, (default, why) in REFUSED.items():
        value = given[name]
        if value is default or (isinstance(value, str | bool) and value == default):
            continue
        raise UsageError(f"{name}={_short(value)}: {why}")


def check_extra(extra: Mapping[str, Any]) -> None:
    """Keyword arguments the loader has no parameter for: server options, DataLoader's others, typos."""
    for name, value in extra.items():
        if name in ServerOptions.model_fields:
            raise UsageError(
                f"{name}={_short(value)}: a memory-server option; pass it as "
                f"server=ServerOptions({name}={_short(value)})"
            )
        if name in REFUSED_DATALOADER:
            raise UsageError(f"{name}: not supported by DistributedGraphLoader: {REFUSED_DATALOADER[name]}")
        known = [*NO_OPS, *REFUSED, *REFUSED_DATALOADER, *ServerOptions.model_fields, *KNOWN]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UsageError(f"DistributedGraphLoader got an unexpected argument {name!r}{hint}")


def check_transport(transport: str, server) -> None:
    """A ``UsageError`` for a transport the loader does not know, or ``server`` that is not a
    ServerOptions."""
    if transport not in ("auto", "local", "mpi"):
        raise UsageError(f"transport={transport!r}: choose 'auto', 'local' or 'mpi'")
    if server is not None and not isinstance(server, ServerOptions):
        raise UsageError(f"server: expected ServerOptions(...), got {type(server).__name__}")


def check_subgraph_type(subgraph_type) -> str:
    """'directional' or 'bidirectional' (PyG's enum or its string), else a ``UsageError``."""
    value = getattr(subgraph_type, "value", subgraph_type)
    if value not in SUBGRAPH_TYPES:
        raise UsageError(
            f"subgraph_type={_short(value)}: choose 'directional' (PyG's default) or 'bidirectional'; "
            "'induced' subgraphs are not supported"
        )
    return value


def hop_fanouts(num_neighbors) -> list:
    """The fanouts to validate before the graph is open: a list as given; for PyG's dict per edge
    type (a heterogeneous graph, resolved once its edge types are known) a stand-in of its hops."""
    if not isinstance(num_neighbors, Mapping):
        return num_neighbors
    lists = list(num_neighbors.values())
    if not lists or not all(isinstance(v, list | tuple) for v in lists):
        raise UsageError(
            "num_neighbors: give a list of fanouts per edge type, e.g. {('paper', 'cites', 'paper'): [15, 10]}"
        )
    return [1] * max(len(v) for v in lists)


def sampling_seed(seed: int | None, generator: torch.Generator | None, mpi: bool) -> int:
    """The seed of the epoch permutations and draws: ``seed``, else the generator's, else (as
    DataLoader shuffles with torch's default generator) one drawn from torch's default generator,
    so ``torch.manual_seed`` fixes them. Under MPI every learner rank must draw the same epochs
    (each takes its slice of one permutation), so there it is 0 unless given."""
    if seed is not None and generator is not None:
        raise UsageError("seed and generator both fix the draws; give one of them")
    if generator is not None:
        if not isinstance(generator, torch.Generator):
            raise UsageError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
        return generator.initial_seed() % SEED_RANGE
    if seed is None:
        return 0 if mpi else int(torch.randint(0, SEED_RANGE - 1, ()).item())
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"seed={_short(seed)}: give an integer >= 0")
    return seed


def timeout_seconds(timeout) -> float:
    """DataLoader's ``timeout``: > 0 the longest wait for a batch; 0 means ``DEFAULT_TIMEOUT_S``."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        raise UsageError(f"timeout={_short(timeout)}: give the longest wait for a batch in seconds (>= 0)")
    return float(timeout) if timeout > 0 else DEFAULT_TIMEOUT_S


def prefetch_batches(prefetch_factor) -> int:
    """DataLoader's ``prefetch_factor``: batches built ahead of the training loop."""
    if prefetch_factor is None:
        return DEFAULT_PREFETCH
    if isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int) or prefetch_factor < 1:
        raise UsageError(f"prefetch_factor={_short(prefetch_factor)}: give the batches to build ahead (>= 1)")
    return prefetch_factor


def pins_batches(pin_memory: bool, device: torch.device) -> bool:
    """Whether CPU batches are copied into pinned memory. On a CUDA ``device`` the loader stages
    through pinned memory anyway; without CUDA there is nothing to pin for, and, as DataLoader
    does, the request is ignored with a warning."""
    if not pin_memory or device.type == "cuda":
        return False
    if not torch.cuda.is_available():
        warnings.warn(
            "pin_memory=True, but no CUDA device is available, so batches are not pinned", UserWarning, stacklevel=3
        )
        return False
    return True


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
