"""The typer application every `remotegnn` command module registers on.

Consoles, the error handler, ``--json`` output and option parsing come from :mod:`foundation.cli`,
shared with `planner` and `provision`.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    help="RemoteGNN: datasets, sampling and feature caches for two-level GNN training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
