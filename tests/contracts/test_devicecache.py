"""The device cache's "auto" budget: what the first training step still needs is always left."""

from __future__ import annotations

import pytest

from contracts.devicecache import DEVICE_MARGIN, OPTIMIZER_COPIES, auto_device_cache_bytes
from foundation.units import GIB


@pytest.mark.parametrize("free_gib", [2, 10, 22, 70])
@pytest.mark.parametrize("parameter_mib", [0, 1, 600])
@pytest.mark.parametrize("activation_gib", [0.0, 1.5, 9.0])
def test_auto_never_takes_what_the_step_needs_and_never_goes_negative(free_gib, parameter_mib, activation_gib):
    total, free = 24 * GIB, free_gib * GIB
    parameters, activations = parameter_mib << 20, activation_gib * GIB
    budget = auto_device_cache_bytes(total, free, parameters, activations)
    assert 0 <= budget <= free
    needed = OPTIMIZER_COPIES * parameters + activations + DEVICE_MARGIN * total
    if budget:
        assert free - budget == pytest.approx(needed, abs=1)


def test_less_free_memory_means_a_smaller_cache():
    sizes = [auto_device_cache_bytes(24 * GIB, free * GIB, 100 << 20, 2 * GIB) for free in (4, 8, 16)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
