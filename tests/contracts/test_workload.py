"""The workload: every way to say the GPU cache is off is one request, and a wrong GPU cache or
sampling mode names its field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from contracts.workload import MAX_GPU_CACHE_GIB, Workload


def test_the_gpu_cache_is_off_by_default_as_the_loaders_is():
    assert Workload().gpu_cache_gib == 0.0


@pytest.mark.parametrize(
    ("given", "kept"), [("none", 0.0), ("Off", 0.0), (0, 0.0), ("5", 5.0), (2.5, 2.5), ("auto", "auto")]
)
def test_gpu_cache_values(given, kept):
    assert Workload(gpu_cache_gib=given).gpu_cache_gib == kept
    assert Workload(gpu_cache_gib=given) == Workload(gpu_cache_gib=kept)  # the same request, the same plan id


@pytest.mark.parametrize("bad", [-1, "-0.5", MAX_GPU_CACHE_GIB + 1, "lots", float("nan"), True, [5]])
def test_a_bad_gpu_cache_is_refused_naming_the_field(bad):
    with pytest.raises(ValidationError) as caught:
        Workload(gpu_cache_gib=bad)
    (error,) = caught.value.errors()
    assert error["loc"] == ("gpu_cache_gib",) and "is not auto, none or a size in GiB" in error["msg"]


def test_the_planner_chooses_who_samples_by_default():
    assert Workload().sampling == "auto"
    assert Workload(sampling="learner").sampling == "learner"


@pytest.mark.parametrize("bad", ["both", "Memory", "", None, 1])
def test_a_bad_sampling_mode_is_refused_naming_the_field(bad):
    with pytest.raises(ValidationError) as caught:
        Workload(sampling=bad)
    (error,) = caught.value.errors()
    assert error["loc"] == ("sampling",) and "'auto', 'memory' or 'learner'" in error["msg"]
