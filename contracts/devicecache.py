"""How much of a GPU the learner's device feature cache may take: one rule for the loader's
``device_cache="auto"`` and the planner's ``gpu_cache_gib="auto"``.

The cache is filled when the loader opens, before the first training step, so what the step
will still allocate must be left free then:

- the optimizer's state and the gradients, ``OPTIMIZER_COPIES`` times the parameters (Adam keeps
  two moments per parameter; the gradients are a third copy), allocated at the first step;
- the activations of the largest batch, which autograd keeps until the backward pass;
- ``DEVICE_MARGIN`` of the device's memory: the caching allocator's fragmentation, batches larger
  than the estimate, and the kernels' workspaces.

What is already on the device when the loader opens (the CUDA context, the parameters if the
model was moved first) is not free memory, so it is never counted twice. The planner, which sees
no device, takes ``CUDA_CONTEXT_BYTES`` and the model's parameters as already allocated.
"""

from __future__ import annotations

from typing import Final

OPTIMIZER_COPIES: Final = 3
"""Bytes the first step allocates per byte of parameters: gradients and Adam's two moments."""
DEVICE_MARGIN: Final = 0.10
"""Share of the device's memory the cache never takes (allocator fragmentation, larger batches)."""
CUDA_CONTEXT_BYTES: Final = 512 << 20
"""What the CUDA context and the libraries' handles take before anything is allocated (torch on
an A10G or H100: 0.4-0.5 GiB), for the planner, which cannot ask the device."""
ACTIVATION_BYTES_PER_NODE: Final = 6 * 1024
"""Activations the loader assumes per node of a batch when it cannot know the model: a 3-layer
model 256 wide keeps each layer's output and its gradient in float32 (3 x 2 x 1 KiB)."""


def auto_device_cache_bytes(total_bytes: int, free_bytes: int, parameter_bytes: int, activation_bytes: float) -> int:
    """The cache's budget on a device of ``total_bytes`` with ``free_bytes`` free now, for a model
    of ``parameter_bytes`` whose largest batch keeps ``activation_bytes`` (never negative)."""
    needed = OPTIMIZER_COPIES * parameter_bytes + activation_bytes + DEVICE_MARGIN * total_bytes
    return max(0, int(free_bytes - needed))
