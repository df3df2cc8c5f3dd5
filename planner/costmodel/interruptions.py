"""What spot interruptions add to a job, and whether spot still pays once they are priced.

AWS reclaims a share of each type's spot instances every month (the snapshot's band for the
type, priced at the band's representative share; ``spot_unknown_monthly_share`` for a type
without one). Taken as a constant hazard per running hour, a share p a month is -ln(1 - p) / 730
interruptions an hour, and a cluster's hazard is the sum of its machines'. Each interruption costs
the recovery R: a replacement launched and booted (``spot_replacement_s``), the job's start-up
again (the data loaded into RAM and the caches) and, on average, half the work between two
checkpoints (``checkpoint_interval_s``). Interruptions strike during recoveries too, so a job of T
hours takes T / (1 - hazard x R) on spot (never, where hazard x R reaches 1). A cluster whose
expected spot bill is not below its on-demand bill runs on demand: spot that loses after its
interruptions is never recommended.
"""

from __future__ import annotations

import dataclasses
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


def spot_or_on_demand(
    inputs: ModelInputs, clusters: Clusters, ev: Evaluation, on_demand_hourly: np.ndarray
) -> Evaluation:
    """``ev`` (priced at spot) with each cluster on the market that is cheaper once spot's
    interruptions are priced; its details gain what the explanation quotes."""
    co = inputs.coefficients
    hazard = hazard_per_hour(inputs)
    cluster_hazard = hazard[clusters.learner] + np.where(
        clusters.count > 0, clusters.count * hazard[np.maximum(clusters.memory, 0)], 0.0
    )
    recovery_s = co.spot_replacement_s + ev.startup_s + co.checkpoint_interval_s / 2
    lost = cluster_hazard * recovery_s / SECONDS_PER_HOUR
    with np.errstate(divide="ignore"):
        factor = np.where(lost < 1, 1 / (1 - lost), np.inf)
    base = ev.total_hours
    extras = ev.epochs * ev.usd_per_epoch_extra + ev.usd_fixed_extra
    spot_usd = base * factor * ev.hourly_usd + extras
    on_demand_usd = base * on_demand_hourly + extras
    spot = ~(on_demand_usd < spot_usd)  # spot unless on demand is cheaper (or spot alone has a price)
    outcome = SpotOutcome(spot, cluster_hazard, recovery_s, factor, spot_usd, on_demand_usd)
    details = ev.details
    if isinstance(details, Details):
        details.stored.update(_figures(outcome, base))
    return dataclasses.replace(
        ev, hourly_usd=np.where(spot, ev.hourly_usd, on_demand_hourly), time_factor=np.where(spot, factor, 1.0)
    )


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
