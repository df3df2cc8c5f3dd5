"""What spot interruptions add to a job, and whether spot still pays once they are priced.

AWS reclaims a share of each type's spot instances every month (the snapshot's band for the
type, priced at the band's representative share; ``spot_unknown_monthly_share`` for a type
without one). Taken as a constant hazard per running hour, a share p a month is -ln(1 - p) / 730
interruptions an hour, and a cluster's hazard is the sum of its machines'. Each interruption costs
the recovery R: a replacement launched and booted (``spot_replacement_s``), the job's start-up
again (the data loaded into RAM and the caches) and, on average, half the work between two
checkpoints (``checkpoint_interval_s``). Interruptions strike during recoveries too, so a job of T
hours takes T / (1 - hazard x R) on spot (never, where hazard x R reaches 1).

Full-graph training (RETEXO, SliceGCN) keeps no checkpoints: an interruption of any worker starts
the job over after R = replacement + start-up. With a constant hazard h that is the classic
restart-from-scratch expectation (1/h + R)(e^(hT) - 1), which grows faster than linearly in T:
long full-graph jobs on spot pay for it.

A cluster whose expected spot bill is not below its on-demand bill runs on demand: spot that
loses after its interruptions is never recommended.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from planner.catalog.models import HOURS_PER_MONTH
from planner.costmodel.evaluation import Clusters, Details, Evaluation, ModelInputs

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class SpotOutcome:
    """Per cluster: the market it runs on and what interruptions add on spot."""

    spot: np.ndarray  # bool: spot pays after its interruptions
    hazard_per_hour: np.ndarray  # the cluster's expected interruptions per running hour on spot
    recovery_s: np.ndarray  # seconds lost to each
    time_factor: np.ndarray  # wall time on spot / time without interruptions (inf: never finishes)
    spot_usd: np.ndarray  # the job's expected bill on spot
    on_demand_usd: np.ndarray  # and on demand


def hazard_per_hour(inputs: ModelInputs) -> np.ndarray:
    """Each catalog type's interruptions per running hour of one spot instance."""
    share = inputs.columns.spot_monthly_share
    share = np.where(np.isnan(share), inputs.coefficients.spot_unknown_monthly_share, share)
    return -np.log1p(-share) / HOURS_PER_MONTH


def pipeline_hazard(inputs: ModelInputs, clusters: Clusters) -> np.ndarray:
    """Learner machines and their memory machines: every machine's interruptions per hour, summed."""
    hazard = hazard_per_hour(inputs)
    return inputs.workload.learner_machines * hazard[clusters.learner] + np.where(
        clusters.count > 0, clusters.count * hazard[np.maximum(clusters.memory, 0)], 0.0
    )


def workers_hazard(inputs: ModelInputs, clusters: Clusters) -> np.ndarray:
    """n identical full-graph workers (the master on worker 0's machine)."""
    return clusters.count * hazard_per_hour(inputs)[clusters.memory]


def spot_or_on_demand(
    inputs: ModelInputs,
    ev: Evaluation,
    on_demand_hourly: np.ndarray,
    cluster_hazard: np.ndarray,
    checkpointed: bool = True,
) -> Evaluation:
    """``ev`` (priced at spot) with each cluster on the market that is cheaper once spot's
    interruptions are priced; its details gain what the explanation quotes. ``cluster_hazard``:
    each cluster's interruptions per running hour; ``checkpointed``: an interruption costs a
    recovery and half a checkpoint interval (else the job starts over)."""
    co = inputs.coefficients
    base = ev.total_hours
    if checkpointed:
        recovery_s = co.spot_replacement_s + ev.startup_s + co.checkpoint_interval_s / 2
        lost = cluster_hazard * recovery_s / SECONDS_PER_HOUR
        with np.errstate(divide="ignore"):
            factor = np.where(lost < 1, 1 / (1 - lost), np.inf)
    else:
        recovery_s = co.spot_replacement_s + ev.startup_s
        factor = _restart_factor(cluster_hazard, recovery_s / SECONDS_PER_HOUR, base)
    extras = ev.epochs * ev.usd_per_epoch_extra + ev.usd_fixed_extra
    spot_usd = base * factor * ev.hourly_usd + extras
    on_demand_usd = base * on_demand_hourly + extras
    spot = ~(on_demand_usd < spot_usd)  # spot unless on demand is cheaper (or spot alone has a price)
    outcome = SpotOutcome(spot, cluster_hazard, recovery_s, factor, spot_usd, on_demand_usd)
    figures = _figures(outcome, base) | {"starts_over": np.full(spot.shape, float(not checkpointed))}
    details: Mapping[str, np.ndarray]
    if isinstance(ev.details, Details):
        ev.details.stored.update(figures)
        details = ev.details
    else:
        details = {**ev.details, **figures}
    return dataclasses.replace(
        ev,
        hourly_usd=np.where(spot, ev.hourly_usd, on_demand_hourly),
        time_factor=np.where(spot, factor, 1.0),
        details=details,
    )


def _restart_factor(hazard: np.ndarray, restart_h: np.ndarray | float, hours: np.ndarray) -> np.ndarray:
    """Expected wall time / ``hours`` of a job that starts over at each interruption, each start
    costing ``restart_h`` first: (1/h + R)(e^(hT) - 1) / T, which is 1 where h or T is 0."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        expected = (1 / hazard + restart_h) * np.expm1(hazard * hours)
        factor = expected / hours
    return np.where((hazard > 0) & (hours > 0), factor, 1.0)


def _figures(outcome: SpotOutcome, base_hours: np.ndarray) -> dict[str, np.ndarray]:
    spot_hours = base_hours * outcome.time_factor
    return {
        "spot": outcome.spot.astype(float),
        "interruptions": outcome.hazard_per_hour * spot_hours,
        "recovery_s": np.broadcast_to(outcome.recovery_s, outcome.spot.shape),
        "interruption_hours": spot_hours - base_hours,
        "spot_usd": outcome.spot_usd,
        "on_demand_usd": outcome.on_demand_usd,
    }
