"""The typer application every `remotegnn` command module registers on, and shared CLI helpers."""

from __future__ import annotations

import sys

import typer

from planner.cli.main import err, handle_errors, out

__all__ = ["app", "err", "handle_errors", "out", "emit_json", "int_list"]

app = typer.Typer(
    help="RemoteGNN: datasets, sampling and feature caches for two-level GNN training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def emit_json(model) -> None:
    """Print a pydantic model as the command's --json result."""
    sys.stdout.write(model.model_dump_json(indent=2) + "\n")


def int_list(value: str, flag: str) -> list[int]:
    """'15,10,5' -> [15, 10, 5], with an error that names the flag."""
    from remotegnn.errors import UsageError

    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{flag}: {value!r} is not a comma-separated list of integers such as 15,10,5") from None
