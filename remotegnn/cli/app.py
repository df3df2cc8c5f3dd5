"""The typer application every `remotegnn` command module registers on, and shared CLI helpers."""

from __future__ import annotations

import sys

import typer

from planner.cli.main import err, handle_errors, out

__all__ = ["app", "err", "handle_errors", "out", "emit_json", "flag_errors", "int_list"]

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


def flag_errors(exc, flags: dict[str, str] | None = None) -> Exception:
    """A pydantic ValidationError over CLI-shaped fields as a UsageError naming the flags
    (``flags`` maps a field to its option where the names differ)."""
    from remotegnn.errors import UsageError

    parts = []
    for error in exc.errors()[:3]:
        field = str(error["loc"][-1]) if error["loc"] else ""
        field = (flags or {}).get(field, field)
        where = f"--{field.replace('_', '-')}: " if field else ""
        parts.append(where + error["msg"].removeprefix("Value error, "))
    return UsageError("; ".join(parts))
