"""Where a two-level cluster samples its mini-batches, as the pipeline model prices it.

- ``memory``: the memory machines sample every batch (each holds the CSR and CSC) and send the
  learner compact frames: every node's position and label, every destination's edge count, every
  edge's source index, and the feature rows the learner does not cache.
- ``learner``: the learner holds the graph's CSC in its RAM, samples its own batches and asks the
  memory machines, by id, for the rows no cache of its own holds; only those ids go out and only
  those rows come back. Its CSC comes out of the RAM its feature cache could use, and a learner
  whose free RAM cannot hold the CSC cannot sample (``Unrunnable.CSC_EXCEEDS_LEARNER_RAM``).

The sampling work is the same either way (the same edges per batch at the same
``sample_edges_per_core_s``); in learner mode it runs on the learner's vCPUs, less a core for each
training process. It is folded into the ``cpu`` stage, which becomes the slower of the memory
machines' gathering and the learner's sampling (both run beside the other stages, and keeping
the stage names keeps every plan, page and report that names them). The memory machines keep
loading the structure at start-up in learner mode (they send the learner its CSC over the link
then), and their RAM caches are priced beside it as in memory mode: a simplification that never
prices learner mode as cheaper than it is.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from contracts.workload import SamplingMode, Workload
from planner.costmodel.evaluation import Clusters, ModelInputs

SAMPLING_ORDER: Final = ("memory", "learner")
"""The modes sampling="auto" tries on every cluster, in order: ties keep the earlier (the memory
machines sample, as RemoteGNN always has)."""
TRAINING_CORES_PER_RANK: Final = 1
"""vCPUs each data-parallel training process keeps busy on the learner (feeding its GPU), which
learner-side sampling cannot use."""


def sampling_modes(workload: Workload) -> tuple[SamplingMode, ...]:
    """The modes the pricing tries: the one asked for, or both for auto."""
    return SAMPLING_ORDER if workload.sampling == "auto" else (workload.sampling,)


def learner_sampling_cores(inputs: ModelInputs, clusters: Clusters) -> np.ndarray:
    """Per cluster, the vCPUs learner-side sampling runs on: every learner machine's, less a core
    per training rank, at least one each."""
    cols = inputs.columns
    free = np.maximum(cols.vcpus - TRAINING_CORES_PER_RANK * inputs.learner_ranks, 1)
    return inputs.workload.learner_machines * free[clusters.learner]
