"""The typer application every `remotegnn` command module registers on.

Consoles, the error handler, ``--json`` output and option parsing come from :mod:`foundation.cli`,
shared with `planner` and `provision`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel

from foundation.cli import emit_json
from foundation.fileio import write_model

app = typer.Typer(
    help="RemoteGNN: datasets, sampling and feature caches for two-level GNN training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def report_result(result: BaseModel, output: Path | None, as_json: bool, render: Callable[[Any], None]) -> None:
    """A training command's ending: the result JSON to ``--output`` (atomically), then the result
    on stdout as JSON with ``--json``, else in the command's own words (``render``)."""
    if output is not None:
        write_model(output, result)
    if as_json:
        emit_json(result)
        return
    render(result)
