"""The MemoryBridge paper's ClusterPlanner model, equations (3)-(8), exactly as printed.

Units as in the paper's Table IV: |G| in GB, bandwidths in MB/s, phi in s/MB, prices in USD/h.
|G| x phi is GB x s/MB, converted to seconds with 1 GB = 1000 MB. M_l is the memory machine's
RAM converted from GiB to GB. omega(beta_x) is the volume's hourly price at that bandwidth.

The model reads |G| once per epoch from the slower of instance and volume; in the two-level
layout, the part that the memory machine's RAM holds is never read. That is all it knows: no
IOPS, no network, no sampling CPU, no GPU. It describes one memory machine.
"""

from __future__ import annotations

import numpy as np

from contracts.plan import Unrunnable
from foundation.units import GIB, hours
from planner.costmodel.evaluation import Clusters, Evaluation, ModelInputs, first_unrunnable
from planner.costmodel.interruptions import pipeline_hazard, spot_or_on_demand

MB_PER_GB = 1000.0


def phi(s, x):
    """Inverse effective bandwidth (s/MB): phi(s, x) = max(1/s, 1/x)."""
    return np.maximum(1.0 / np.asarray(s, dtype=float), 1.0 / np.asarray(x, dtype=float))


def t1(g_gb, beta_k_s, beta_x):
    """(3) T1 = |G| phi(beta_k^s, beta_x), in seconds."""
    return g_gb * MB_PER_GB * phi(beta_k_s, beta_x)


def p1(omega, p_k):
    """(4) P1 = omega(beta_x) + p_k."""
    return omega + p_k


def c1(t1_s, p1_usd_h):
    """(5) C1 = T1 P1 (USD, with T1 converted to hours)."""
    return hours(t1_s) * p1_usd_h


def t2(g_gb, m_l_gb, beta_l_s, beta_x):
    """(6) T2 = (1 - M_l/|G|) |G| phi(beta_l^s, beta_x), in seconds (negative when M_l > |G|, as printed)."""
    return (1.0 - m_l_gb / g_gb) * g_gb * MB_PER_GB * phi(beta_l_s, beta_x)


def p2(omega, p_k, p_l):
    """(7) P2 = omega(beta_x) + p_k + p_l."""
    return omega + p_k + p_l


def c2(t2_s, p2_usd_h):
    """(8) C2 = T2 P2 (USD, with T2 converted to hours)."""
    return hours(t2_s) * p2_usd_h


def evaluate(inputs: ModelInputs, clusters: Clusters) -> Evaluation:
    """Price every cluster with equations (3)-(8); T is taken as the time of one epoch.

    The one liberty: T2 is clipped at zero (a memory machine larger than |G| reads nothing),
    because a negative time would make any such cluster look infinitely good.
    """
    cols, profile = inputs.columns, inputs.profile
    two = clusters.count > 0
    data = clusters.data_machine
    g_gb = profile.total_bytes / 1e9
    volume_gb = inputs.volume_size_gb(clusters, np.full(len(clusters), float(profile.total_bytes)))
    omega = inputs.volume.hourly_usd(volume_gb, clusters.volume_iops, clusters.volume_mbps)

    def hourly_at(spot: bool) -> np.ndarray:
        price = cols.price(spot)
        p_k = price[clusters.learner]
        p_l = np.where(two, price[np.maximum(clusters.memory, 0)], 0.0)
        return np.where(two, p2(omega, p_k, p_l), p1(omega, p_k))

    m_l_gb = cols.memory_gib[data] * GIB / 1e9
    beta_s = cols.ebs_baseline_mbps[data]
    storage = np.where(
        two,
        np.maximum(t2(g_gb, m_l_gb, beta_s, clusters.volume_mbps), 0.0),
        t1(g_gb, beta_s, clusters.volume_mbps),
    )
    hourly = hourly_at(inputs.spot)
    infeasible = first_unrunnable(
        {
            Unrunnable.NO_PRICE: ~np.isfinite(hourly),
            Unrunnable.UNSUPPORTED_GPU: ~np.isfinite(inputs.learner_tflops[clusters.learner]),
            Unrunnable.SEVERAL_MEMORY_MACHINES: clusters.count > 1,
            Unrunnable.VOLUME_TOO_LARGE: volume_gb > inputs.volume.max_size_gb,
        }
    )
    ev = Evaluation(
        model="paper",
        stages={"storage": storage},
        startup_s=np.zeros(len(clusters)),
        hourly_usd=hourly,
        volume_gb=volume_gb,
        infeasible=infeasible,
        epochs=inputs.workload.epochs,
        details={"dataset_gb": np.full(len(clusters), g_gb), "effective_mbps": 1.0 / phi(beta_s, clusters.volume_mbps)},
    )
    return spot_or_on_demand(inputs, ev, hourly_at(False), pipeline_hazard(inputs, clusters)) if inputs.spot else ev
