"""The cost-vs-time frontier as a PNG (matplotlib, headless)."""

from __future__ import annotations

import io
from pathlib import Path

from contracts.plan import Recommendation
from foundation.fileio import atomic_write_bytes


def frontier_png(rec: Recommendation, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    hours = [p.total_hours for p in rec.frontier]
    usd = [p.total_usd for p in rec.frontier]
    ax.plot(hours, usd, "o-", color="#4477aa", label="Pareto frontier (no cluster is both cheaper and faster)")
    for plan, marker, color, name in (
        (rec.single_machine, "s", "#ee6677", "best single machine"),
        (rec.two_level, "^", "#228833", "best two-level cluster"),
        (rec.chosen, "*", "#000000", "recommended"),
    ):
        if plan:
            ax.scatter(
                [plan.total_hours],
                [plan.total_usd],
                marker=marker,
                s=160,
                color=color,
                zorder=3,
                label=f"{name}: {plan.label}",
            )
    budget = rec.request.constraints.budget_usd
    if budget:
        ax.axhline(budget, color="#bbbbbb", linestyle="--", label=f"budget ${budget:g}")
    # Log axes spread clusters that differ by orders of magnitude; the paper model can price a
    # cluster at zero, which log axes cannot show, so fall back to linear axes then.
    shown = hours + usd + [p.total_usd for p in (rec.chosen, rec.single_machine, rec.two_level) if p]
    scale = "log" if shown and min(shown) > 0 else "linear"
    ax.set_xscale(scale)
    ax.set_yscale(scale)
    ax.set_xlabel(f"total time (hours, {scale})")
    ax.set_ylabel(f"total cost (USD, {scale})")
    ax.set_title(f"{rec.profile.name}, {rec.request.workload.epochs} epochs ({rec.request.model} model)")
    ax.legend(fontsize=7, loc="best")
    ax.grid(True, which="both", alpha=0.3)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(fig)
    return atomic_write_bytes(path, buffer.getvalue())
