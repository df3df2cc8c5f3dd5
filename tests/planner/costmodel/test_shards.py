"""The shard layout in the pipeline model: what each data machine stages and reads at start-up."""

from __future__ import annotations

import math

import numpy as np
import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.profile import DatasetProfile
from contracts.shards import READAHEAD_BYTES, SHARD_LAYOUTS, ShardLayout
from contracts.workload import Workload
from foundation.units import GIB
from planner.costmodel import pipeline
from planner.costmodel.evaluation import ModelInputs
from planner.costmodel.shards import largest_part_rows, read_share, shard_shares, window_rows
from planner.datasets.builtin import builtin_profile
from tests.planner.conftest import make_clusters

ROWS = 2**20  # 128 KiB windows of 256 rows of 512 B; striped over two: 128 blocks of 8,192 rows, 64 each
STRUCTURE = 10**9


def flat(rows: int = ROWS, dim: int = 128, structure: int = STRUCTURE) -> DatasetProfile:
    """A profile with ``rows`` float32 rows of ``dim`` and a linear cache curve (x of the rows
    serve x of the reads)."""
    return DatasetProfile(
        name="flat",
        num_nodes=rows,
        num_edges=rows * 10,
        feature_rows=rows,
        feature_dim=dim,
        num_train=rows // 10,
        structure_bytes=structure,
        cache_curves={"degree": [(1.0, 1.0)]},
    )


def inputs(catalog, profile: DatasetProfile, **workload) -> ModelInputs:
    return ModelInputs(
        columns=catalog.columns,
        volume=catalog.volumes["gp3"],
        profile=profile,
        workload=Workload(**{"learner_cache": "none", **workload}),
        coefficients=DEFAULT_COEFFICIENTS,
    )


def test_read_share_by_hand():
    """f = 1% of a machine's rows, w = 256 rows a window, k = 2."""
    profile = flat()
    assert window_rows(profile) == READAHEAD_BYTES / 512 == 256
    striped, modulo = shard_shares("striped", profile, 2), shard_shares("modulo", profile, 2)
    # Striped: its own half of the file, and within it every window holding one of its hot rows:
    # 0.5 x (1 - 0.99^256) = 0.5 x (1 - 0.076315) = 0.461843.
    assert striped.window_share[2] == 0.5 and striped.own_density[2] == 1.0
    assert read_share(striped.window_share[2], striped.own_density[2], 0.01, 256) == pytest.approx(0.461843, rel=1e-5)
    # Modulo, as always priced: its rows spread over the file, 1 - (1 - 0.01/2)^256 = 1 - 0.277146 = 0.722854.
    assert modulo.window_share[2] == 1.0 and modulo.own_density[2] == 0.5
    assert read_share(modulo.window_share[2], modulo.own_density[2], 0.01, 256) == pytest.approx(0.722854, rel=1e-5)
    # One machine holds every row under either layout: 1 - 0.99^256.
    for shares in (striped, modulo):
        for k in (0, 1):  # 0: a single machine's count
            assert read_share(shares.window_share[k], shares.own_density[k], 0.01, 256) == pytest.approx(
                0.923685, rel=1e-5
            )


def test_staged_bytes_are_the_structure_and_the_part_a_machine_holds():
    profile = flat()
    features = ROWS * 512
    striped, ranged, modulo = (shard_shares(layout, profile, 4) for layout in ("striped", "range", "modulo"))
    for shares in (striped, ranged):
        assert shares.staged_bytes[2] == STRUCTURE + features / 2
        assert shares.staged_bytes[4] == STRUCTURE + features / 4
    assert list(modulo.staged_bytes) == [STRUCTURE + features] * 5  # every row's place in the file
    assert striped.staged_bytes[1] == striped.staged_bytes[0] == STRUCTURE + features
    # Parts that differ by a block: the largest sizes every volume, and is read whole at most.
    uneven = shard_shares("striped", flat(rows=1000), 3)
    part = ShardLayout.of("striped", 3, 1000, 512)
    assert uneven.staged_bytes[3] == STRUCTURE + max(part.rows(i) for i in range(3)) * 512
    assert uneven.window_share[3] * uneven.own_density[3] == pytest.approx(1 / 3)  # its share of the hot rows


@pytest.mark.parametrize("layout", SHARD_LAYOUTS)
@pytest.mark.parametrize(("rows", "row_bytes"), [(1000, 512), (10**6 + 7, 4096), (7, 8), (2**20, 512), (3, 10**8)])
def test_the_largest_part_is_the_largest_of_the_parts(layout, rows, row_bytes):
    for count in (1, 2, 3, 5, 16):
        part = ShardLayout.of(layout, count, rows, row_bytes)
        if layout == "modulo" and rows > 10**5:
            assert largest_part_rows(part) == -(-rows // count)  # ranges() of one-row blocks is large
        else:
            assert largest_part_rows(part) == max(part.rows(i) for i in range(count))


def test_a_striped_machines_start_up_reads_its_part_and_the_windows_its_hot_rows_need(catalog, index):
    """Two memory machines whose caches hold 1/64 of 32 GiB of rows: the read from each volume is
    the structure and 1/2 x (1 - (1 - f_U)^256) of the feature file, at the volume's rate."""
    ram = catalog.instance("r8g.large").memory_gib * GIB
    structure = int(ram - DEFAULT_COEFFICIENTS.os_reserve_gib * GIB) - 2**28  # a quarter GiB left to cache
    profile = flat(rows=2**26, structure=structure)
    clusters = make_clusters(index, [("g4dn.xlarge", "r8g.large", 2, 1000, 16000)])
    striped = pipeline.evaluate(inputs(catalog, profile), clusters)
    modulo = pipeline.evaluate(inputs(catalog, profile, shard_layout="modulo"), clusters)
    d = striped.detail_at(0)
    f = d["union_fraction"]
    assert f == pytest.approx(1 / 64)
    features = float(profile.feature_bytes)  # 32 GiB
    read = structure + features / 2 * (1 - (1 - f) ** 256)  # 0.491 of the file: its half, nearly all
    assert read - structure == pytest.approx(0.4911 * features, rel=1e-3)
    assert d["startup_read_gb"] * 1e9 == pytest.approx(read, rel=1e-9)
    # r8g.large's EBS baseline (79 MB/s), not one core's sweep, sets the read's time
    assert d["volume_bps"] < DEFAULT_COEFFICIENTS.sweep_gbps * 1e9
    assert striped.startup_s[0] == pytest.approx(d["startup_fixed_s"] + read / d["volume_bps"], rel=1e-9)
    old = structure + features * (1 - (1 - f / 2) ** 256)  # modulo, as always: 0.866 of the file
    assert old - structure == pytest.approx(0.8657 * features, rel=1e-3)
    assert modulo.detail_at(0)["startup_read_gb"] * 1e9 == pytest.approx(old, rel=1e-9)
    assert modulo.startup_s[0] == pytest.approx(d["startup_fixed_s"] + old / d["volume_bps"], rel=1e-9)
    assert d["staged_gb"] * 1e9 == structure + features / 2
    assert modulo.detail_at(0)["staged_gb"] * 1e9 == structure + features


def test_striped_start_up_is_never_longer_than_modulos_and_the_same_on_one_machine(catalog, index):
    rows = [
        ("g5.4xlarge", None, 0, 125, 3000),
        ("g5.4xlarge", "r6in.2xlarge", 1, 125, 3000),
        ("g5.4xlarge", "r6in.2xlarge", 2, 125, 3000),
        ("g5.4xlarge", "r6in.2xlarge", 3, 250, 3000),
        ("g5.4xlarge", "r6in.4xlarge", 4, 1000, 16000),
        ("g4dn.4xlarge", "r6g.2xlarge", 16, 125, 3000),
    ]
    clusters = make_clusters(index, rows)
    for name in ("papers100M", "mag240m"):
        for cache in ("none", "auto"):
            ev = {
                layout: pipeline.evaluate(
                    inputs(catalog, builtin_profile(name), learner_cache=cache, shard_layout=layout), clusters
                )
                for layout in SHARD_LAYOUTS
            }
            assert np.all(ev["striped"].startup_s <= ev["modulo"].startup_s * (1 + 1e-12))
            # Range: one part each, as large as striped's but for striped's last block (0.1% here).
            np.testing.assert_allclose(ev["range"].startup_s, ev["striped"].startup_s, rtol=2e-3)
            np.testing.assert_allclose(ev["striped"].startup_s[:2], ev["modulo"].startup_s[:2], rtol=1e-12)
            assert np.all(ev["striped"].startup_s[2:] < ev["modulo"].startup_s[2:])
            # The epoch does not change: misses are one I/O each wherever the row lies.
            for stage, seconds in ev["striped"].stages.items():
                np.testing.assert_allclose(seconds, ev["modulo"].stages[stage], rtol=1e-12)
            # Each volume holds what staging copies it.
            staged = ev["striped"].details["staged_gb"]
            assert np.all(staged <= ev["modulo"].details["staged_gb"])
            assert np.all(ev["striped"].volume_gb <= ev["modulo"].volume_gb)
            assert ev["striped"].volume_gb[2] == math.ceil(DEFAULT_COEFFICIENTS.volume_headroom * staged[2])
