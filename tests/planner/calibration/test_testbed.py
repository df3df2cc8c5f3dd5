"""A testbed configuration priced by the unchanged cost models."""

from __future__ import annotations

import math

import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.wirebytes import REQUEST_ID_BYTES, batch_overhead_bytes
from contracts.workload import Workload
from foundation.errors import UsageError
from planner.calibration.testbed import EmulatedCluster, link_bytes, model_inputs, predict
from tests.planner.calibration.conftest import PROFILE, TRUTH

WORKLOAD = Workload(fanouts=[10, 5], batch_size=256, hidden_dim=16)


def machine(**overrides) -> EmulatedCluster:
    return EmulatedCluster(
        **{
            "cores": 2,
            "link_gbit": 1.0,
            "volume_mbps": 125.0,
            "volume_iops": 64000,
            "cache_bytes": int(0.3 * PROFILE.feature_bytes),
            **overrides,
        }
    )


def test_the_cache_is_the_configured_bytes_and_the_volume_is_blkio():
    m = machine()
    ev = predict(m, PROFILE, WORKLOAD, TRUTH)["pipeline"]
    inputs, _ = model_inputs(m, PROFILE, WORKLOAD, TRUTH)
    assert ev.details["cache_fraction"][0] == pytest.approx(0.3, rel=1e-6)
    misses = inputs.batch.batches_per_epoch * inputs.batch.nodes * (1 - ev.details["hit_rate"][0])
    # A 4 KiB row after the feature file's header spans two pages, and a miss reads both.
    assert ev.stages["volume"][0] == pytest.approx(misses * 2 * 4096 / (125e6 * TRUTH.volume_efficiency), rel=1e-3)


def test_a_volume_reads_no_faster_than_the_shared_disk_gives_it():
    fast = machine(volume_mbps=1000.0, memory_hosts=4)
    capped, unlimited_disk, limited_below = (
        predict(m, PROFILE, WORKLOAD, TRUTH)["pipeline"]
        for m in (
            fast.model_copy(update={"disk_mbps": 250.0}),
            fast.model_copy(update={"disk_mbps": 5000.0}),
            machine(volume_mbps=250.0, memory_hosts=4),
        )
    )
    uncapped = predict(fast, PROFILE, WORKLOAD, TRUTH)["pipeline"]
    # A disk slower than the blkio limit sets the rate; a faster one changes nothing.
    assert capped.startup_s[0] == pytest.approx(limited_below.startup_s[0])
    assert capped.stages["volume"][0] == pytest.approx(limited_below.stages["volume"][0])
    assert unlimited_disk.startup_s[0] == pytest.approx(uncapped.startup_s[0])
    d = capped.detail_at(0)
    read = d["startup_read_gb"] * 1e9
    assert capped.startup_s[0] == pytest.approx(d["startup_fixed_s"] + read / (250e6 * TRUTH.volume_efficiency))
    # A volume faster than one core sweeps into the caches: the sweep sets the start-up
    swift = predict(machine(volume_mbps=20_000.0, memory_hosts=4), PROFILE, WORKLOAD, TRUTH)["pipeline"]
    assert 20_000e6 * TRUTH.volume_efficiency > TRUTH.sweep_gbps * 1e9
    assert swift.startup_s[0] == pytest.approx(d["startup_fixed_s"] + read / (TRUTH.sweep_gbps * 1e9))


def test_hosts_sharing_cores_choose_and_sweep_their_caches_that_much_slower():
    own, half = (
        predict(machine(volume_mbps=20_000.0, memory_hosts=4, core_share=share), PROFILE, WORKLOAD, TRUTH)["pipeline"]
        for share in (1.0, 0.5)
    )
    a, b = own.detail_at(0), half.detail_at(0)
    assert a["startup_fixed_s"] == pytest.approx(TRUTH.job_start_s + PROFILE.num_nodes / TRUTH.rank_nodes_per_s)
    assert b["startup_fixed_s"] - TRUTH.job_start_s == pytest.approx(2 * (a["startup_fixed_s"] - TRUTH.job_start_s))
    assert b["startup_read_s"] == pytest.approx(2 * a["startup_read_s"])
    assert half.epoch_s[0] == pytest.approx(own.epoch_s[0], rel=1e-12)  # the epoch's CPU stage is calibrated apart


def test_the_link_is_the_tbf_rate():
    one, five = (predict(machine(link_gbit=g), PROFILE, WORKLOAD, TRUTH)["pipeline"] for g in (1.0, 5.0))
    assert one.stages["network"][0] == pytest.approx(5 * five.stages["network"][0])
    narrow = predict(machine(link_gbit=5.0, learner_gbit=1.0), PROFILE, WORKLOAD, TRUTH)["pipeline"]
    assert narrow.stages["network"][0] == pytest.approx(one.stages["network"][0])


def test_the_paper_model_reads_what_ram_does_not_hold_at_the_volume_rate():
    m = machine()
    seconds = {name: float(ev.epoch_s[0]) for name, ev in predict(m, PROFILE, WORKLOAD, TRUTH).items()}
    unread = PROFILE.total_bytes - (m.cache_bytes + PROFILE.structure_bytes)
    assert seconds["paper"] == pytest.approx(unread / 125e6, rel=1e-6)
    assert math.isfinite(seconds["pipeline"]) and seconds["pipeline"] > 0


def test_an_uncalibrated_learner_is_refused():
    with pytest.raises(UsageError, match="planner calibrate"):
        predict(machine(), PROFILE, WORKLOAD, DEFAULT_COEFFICIENTS)


def test_the_link_bytes_a_testbed_run_is_predicted_to_send_split_ids_from_rows():
    m = machine()
    inputs, _ = model_inputs(m, PROFILE, WORKLOAD, TRUTH)
    assert inputs.workload.sampling == "memory"  # runs that do not say were sampled on the memory hosts
    sent = link_bytes(m, PROFILE, WORKLOAD, TRUTH)
    batch = inputs.batch
    assert sent.sampling == "memory"
    frames = batch_overhead_bytes(m.memory_hosts, learner_samples=False)  # headers and credits
    assert sent.id_gb * 1e9 == pytest.approx(batch.batches_per_epoch * (batch.id_wire_bytes + frames))
    d = predict(m, PROFILE, WORKLOAD, TRUTH)["pipeline"].detail_at(0)
    assert sent.feature_gb == pytest.approx(d["epoch_wire_feature_gb"])
    assert sent.total_gb == pytest.approx(d["epoch_wire_gb"])
    learner = link_bytes(m, PROFILE, WORKLOAD.model_copy(update={"sampling": "learner"}), TRUTH)
    # No learner cache: every row is asked for by id and sent.
    assert learner.sampling == "learner" and learner.feature_gb == pytest.approx(sent.feature_gb)
    requests = batch.nodes * REQUEST_ID_BYTES + batch_overhead_bytes(m.memory_hosts, learner_samples=True)
    assert learner.id_gb * 1e9 == pytest.approx(batch.batches_per_epoch * requests)


def test_each_memory_host_reads_its_own_share_at_start_up_by_the_runs_shard_layout():
    """Two hosts caching 30% of the rows each (f_U = 0.6, 32 rows of 4 KiB a window): dealt in
    stripes each reads its own half of the file; dealt modulo, nearly all of it. A run that names
    no layout was dealt modulo, as hosts dealt rows before layouts existed."""
    m = machine(memory_hosts=2)
    ev = {
        layout: predict(m, PROFILE, Workload(**WORKLOAD.model_dump(exclude_unset=True), shard_layout=layout), TRUTH)[
            "pipeline"
        ]
        for layout in ("striped", "range", "modulo")
    }
    unnamed = predict(m, PROFILE, WORKLOAD, TRUTH)["pipeline"]
    assert unnamed.startup_s[0] == ev["modulo"].startup_s[0]
    d = ev["striped"].detail_at(0)
    assert d["union_fraction"] == pytest.approx(0.6, rel=1e-6)
    own = PROFILE.structure_bytes + PROFILE.feature_bytes / 2 * (1 - 0.4**32)
    spread = PROFILE.structure_bytes + PROFILE.feature_bytes * (1 - 0.7**32)
    assert d["startup_read_gb"] * 1e9 == pytest.approx(own, rel=1e-6)
    assert ev["modulo"].detail_at(0)["startup_read_gb"] * 1e9 == pytest.approx(spread, rel=1e-6)
    fixed = d["startup_fixed_s"]
    assert ev["striped"].startup_s[0] == pytest.approx(fixed + own / (125e6 * TRUTH.volume_efficiency), rel=1e-6)
    assert ev["range"].startup_s[0] == pytest.approx(ev["striped"].startup_s[0], rel=1e-9)
    assert ev["modulo"].startup_s[0] == pytest.approx(fixed + spread / (125e6 * TRUTH.volume_efficiency), rel=1e-6)
    assert ev["striped"].epoch_s[0] == pytest.approx(ev["modulo"].epoch_s[0], rel=1e-12)
