"""The CLI kit every command line of the project uses: ``planner``, ``remotegnn``, ``provision``.

One behaviour for all of them: results on stdout (a table, or the pydantic model as JSON with
``--json``), progress and errors on stderr, and errors as one line without a traceback with the
exit code of :mod:`foundation.errors`. Option values are parsed here so that every error names the
option the user typed. Commands that write output end the same way when interrupted, whichever
signal did it (:func:`handle_interrupts`); commands that run jobs pass the signal on to the job
(:func:`signals_interrupt`).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console

from foundation.errors import MemoryBridgeError, UsageError
from foundation.fileio import JSON_INDENT, model_json, write_model
from foundation.parsing import HostPort, parse_csv, parse_host_port, parse_int_list
from foundation.partial import INTERRUPTING_SIGNALS

PIPED_WIDTH = 160  # piped output (files, CI logs) is not folded at rich's default 80 columns
FIELD_ERRORS_SHOWN = 3  # pydantic errors spelled out in one usage error
SIGNAL_EXIT_BASE = 128  # a command ended by signal N exits with 128 + N, as the shells report it
# Writing to a terminal that was closed (SIGHUP), or to a pipe whose reader is gone.
OUTPUT_GONE = (errno.EIO, errno.EPIPE)

__all__ = [
    "out",
    "err",
    "handle_errors",
    "handle_interrupts",
    "signals_interrupt",
    "stopping_signal",
    "Interrupted",
    "emit_json",
    "report_result",
    "model_default",
    "model_option",
    "csv_option",
    "int_list_option",
    "host_port_option",
    "usage_from_validation",
    "option_name",
]


def _console(stderr: bool) -> Console:
    """A terminal keeps its own width; anything else gets a wide fixed one so tables stay whole."""
    return Console(stderr=stderr) if Console(stderr=stderr).is_terminal else Console(stderr=stderr, width=PIPED_WIDTH)


out = _console(stderr=False)
err = _console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(func: F) -> F:
    """Print a MemoryBridgeError as one line and exit with its code (no traceback)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MemoryBridgeError as exc:
            err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature typer reads


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP (or SIGINT) during a command: a KeyboardInterrupt, so it unwinds the
    command as Ctrl-C does - every ``finally`` and ``__exit__`` runs - and is not swallowed by an
    ``except Exception``."""

    def __init__(self, signum: int):
        self.signal = signal.Signals(signum)
        super().__init__(self.signal.name)


def stopping_signal(interrupt: KeyboardInterrupt) -> signal.Signals:
    """The signal an interrupt stands for: its own (:class:`Interrupted`), else Ctrl-C's."""
    return interrupt.signal if isinstance(interrupt, Interrupted) else signal.SIGINT


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """While the block runs, the first of INTERRUPTING_SIGNALS raises :class:`Interrupted` in the
    main thread.

    Python's default for SIGTERM and SIGHUP ends the process on the spot, so a writer's cleanup
    never runs and its partial output stays on disk. A signal set to be ignored (``nohup``) stays
    ignored, as does one handled outside Python, and off the main thread (where no handler can be
    set) nothing changes. The first signal puts Python's defaults back: whoever insists - Ctrl-C
    again on a cleanup that seems slow, a second SIGTERM - ends the command at once, as without
    this handler, rather than being ignored or waiting for it; what that leaves, the next writer
    of the destination removes (see :mod:`foundation.partial`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in INTERRUPTING_SIGNALS}
    taken = {sig: handler for sig, handler in previous.items() if handler not in (signal.SIG_IGN, None)}

    def restore() -> None:
        for sig, handler in taken.items():
            signal.signal(sig, handler)

    def interrupt(signum: int, frame: object) -> None:
        restore()
        raise Interrupted(signum)

    for sig in taken:
        signal.signal(sig, interrupt)
    try:
        yield
    finally:
        restore()


def handle_interrupts(func: F) -> F:
    """A command that writes output: SIGINT, SIGTERM and SIGHUP unwind it as Ctrl-C does, so its
    writers remove their partial output, and it ends with one line naming the signal and exit
    code 128 + the signal's number.

    Only commands whose every write is atomic wear it: the line says that nothing was left, or
    what was, in the notes (``add_note``) that a writer which had already put its output in
    place added to the interrupt on its way out. After SIGHUP the terminal is gone, so a write
    to it during the unwinding (a progress bar's last refresh) fails and replaces the interrupt:
    the interrupt still ends the command, as it would have. Commands that run servers or jobs
    keep their own handling of these signals."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with signals_interrupt():
                return func(*args, **kwargs)
        except Interrupted as exc:  # one signal, and the unwinding it started ran to the end
            _end_interrupted(exc)
        except OSError as exc:
            interrupt = _interrupt_behind(exc)
            if interrupt is None or exc.errno not in OUTPUT_GONE:
                raise
            _end_interrupted(interrupt)
        except KeyboardInterrupt:  # Ctrl-C again, with Python's own handler back, during that unwinding
            _say_interrupted(
                "SIGINT again before the cleanup finished: partial output may be left beside the destination; "
                "the next run writing it removes it"
            )
            raise typer.Exit(SIGNAL_EXIT_BASE + signal.SIGINT) from None

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature typer reads


def _interrupt_behind(exc: BaseException) -> Interrupted | None:
    """The interrupt during whose unwinding ``exc`` was raised, if any."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, Interrupted):
        cause = cause.__context__
    return cause


def _end_interrupted(exc: Interrupted) -> NoReturn:
    """End the command as the signal asked, with the line that says what it left: what its
    writers noted they had already put in place and kept, else nothing."""
    left = getattr(exc, "__notes__", [])
    _say_interrupted(
        f"{exc.signal.name}: stopped, and its partial output was removed; {'; '.join(left) or 'nothing was left'}"
    )
    raise typer.Exit(SIGNAL_EXIT_BASE + exc.signal) from None


def _say_interrupted(what: str) -> None:
    with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone; the exit code still tells
        err.print(f"[bold red]interrupted[/] by {what}", highlight=False, soft_wrap=True)


def emit_json(result: BaseModel | Sequence[BaseModel]) -> None:
    """Print a command's result (a model, or a list of models) as its ``--json`` document."""
    if isinstance(result, BaseModel):
        sys.stdout.write(model_json(result))
    else:
        items = ",\n".join(m.model_dump_json(indent=JSON_INDENT) for m in result)
        sys.stdout.write(f"[{items}]\n")


def model_default(model: type[BaseModel], field: str) -> Any:
    """The default of ``model``'s field, for an option's default: a command never repeats what its
    model says (``epochs: Annotated[int, typer.Option(...)] = model_default(Workload, "epochs")``)."""
    return model.model_fields[field].get_default(call_default_factory=True)


def model_option(model: type[BaseModel], field: str, *param_decls: str, help: str | None = None, **kwargs: Any) -> Any:
    """A typer option whose default and help both come from ``model``'s field
    (``hidden: int = model_option(TrainConfig, "hidden")``)."""
    info = model.model_fields[field]
    return typer.Option(model_default(model, field), *param_decls, help=help or info.description, **kwargs)


def report_result(result: BaseModel, output: Path | None, as_json: bool, render: Callable[[Any], None]) -> None:
    """A training command's ending: the result JSON to ``--output`` (atomically), then the result
    on stdout as JSON with ``--json``, else in the command's own words (``render``)."""
    if output is not None:
        write_model(output, result)
    if as_json:
        emit_json(result)
        return
    render(result)


def csv_option(value: str | None) -> list[str] | None:
    """A comma-separated option ('g4dn, g5') as a list; None when the option was not given."""
    return None if value is None else parse_csv(value)


def int_list_option(value: str, flag: str) -> list[int]:
    """'15,10,5' -> [15, 10, 5], with an error that names ``flag``."""
    try:
        return parse_int_list(value)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def host_port_option(value: str, flag: str, *, allow_port_zero: bool = False) -> HostPort:
    """A HOST:PORT option, with an error that names ``flag``."""
    try:
        return parse_host_port(value, allow_port_zero=allow_port_zero)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def option_name(field: str, flags: Mapping[str, str] | None = None) -> str:
    """The option a model field comes from: ``flags[field]`` where the names differ, else --field-name."""
    return (flags or {}).get(field) or f"--{field.replace('_', '-')}"


def usage_from_validation(exc: ValidationError, flags: Mapping[str, str] | None = None) -> UsageError:
    """A ValidationError over CLI-shaped fields as one UsageError naming the options.

    ``flags`` maps a field to its option (``{"budget_usd": "--budget"}``) where the names differ.
    """
    parts = []
    for error in exc.errors()[:FIELD_ERRORS_SHOWN]:
        fields = [part for part in error["loc"] if isinstance(part, str)]
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{option_name(fields[-1], flags)}: {message}" if fields else message)
    return UsageError("; ".join(parts))
