"""The typer application every `fullgraph` command module registers on.

Consoles, the error handler, ``--json`` output and option parsing come from :mod:`foundation.cli`,
shared with `planner`, `remotegnn`, `provision` and `testbed`.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    help="Full-graph distributed training on GPU-less workers: partition a graph (or slice its features), train "
    "RETEXO, standard or SliceGCN over a counted exchange (MPI, UDP, PINCH), and predict the bytes each moves.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
