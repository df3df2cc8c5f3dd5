"""contracts.datavolume: the RETEXO paper's Eq. 2, by hand and against its closed form."""

from __future__ import annotations

import pytest

from contracts.datavolume import VolumeInputs, data_volume, gamma_eq2

SMALL = VolumeInputs(
    workers=2, boundary_rows=10, feature_bytes=8, hidden_bytes=[16], model_bytes=100, classifier_bytes=[5], rounds=3
)


def test_volumes_by_hand():
    v = data_volume(SMALL)
    # standard: features once (2 B H0), then per round a forward and a backward exchange per hidden layer
    assert v.standard.message_passing == 2 * 10 * 8 + 4 * 3 * 10 * 16
    assert v.standard.aggregation == 2 * 2 * 3 * 100
    # lazy: one exchange per layer; each layer's rounds also carry its temporary classifier
    assert v.lazy.message_passing == 2 * 10 * 8 + 2 * 10 * 16
    assert v.lazy.aggregation == 2 * 2 * 3 * (100 + 5)
    assert v.gamma == pytest.approx((160 + 1920 + 1200) / (160 + 320 + 1260))


@pytest.mark.parametrize("rounds", [1, 3, 100, 3000])
@pytest.mark.parametrize("boundary", [0, 7, 10_000])
def test_the_sums_are_the_papers_closed_form(rounds, boundary):
    inputs = SMALL.model_copy(update={"rounds": rounds, "boundary_rows": boundary, "hidden_bytes": [16, 32]})
    assert data_volume(inputs).gamma == pytest.approx(gamma_eq2(inputs), rel=1e-12)


def test_gamma_grows_towards_order_R_with_the_boundary():
    few = data_volume(SMALL.model_copy(update={"rounds": 200, "boundary_rows": 10}))
    many = data_volume(SMALL.model_copy(update={"rounds": 200, "boundary_rows": 10**7}))
    assert few.gamma < many.gamma <= 2 * 200
