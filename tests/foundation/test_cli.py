"""foundation.cli.handle_interrupts: SIGINT, SIGTERM and SIGHUP unwind a writing command as Ctrl-C
does, and it ends with one line naming the signal (the real commands, killed mid-write, are in
tests/remotegnn/cli/test_interrupt.py and tests/fullgraph/test_interrupt.py)."""

from __future__ import annotations

import errno
import os
import signal
import time
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from foundation.cli import SIGNAL_EXIT_BASE, handle_errors, handle_interrupts
from foundation.partial import INTERRUPTING_SIGNALS

WORK_S = 60.0  # what the command would spend writing if the signal did not stop it


def command(steps: list[str], *, again: signal.Signals | None = None) -> typer.Typer:
    """A command that signals itself mid-work; ``again``: once more while it cleans up."""
    app = typer.Typer()

    @app.command()
    @handle_errors
    @handle_interrupts
    def write(sig: str) -> None:
        try:
            os.kill(os.getpid(), signal.Signals[sig])
            time.sleep(WORK_S)  # the writing the signal interrupts
            steps.append("finished")
        finally:
            if again is not None:
                os.kill(os.getpid(), again)
            steps.append("cleaned up")

    return app


@pytest.fixture
def handlers(sighup_default) -> Iterator[dict]:
    """The handlers the test starts with (SIGHUP's the default, as under a terminal); put back
    after it whatever it did."""
    before = {sig: signal.getsignal(sig) for sig in INTERRUPTING_SIGNALS}
    yield before
    for sig, handler in before.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("sig", INTERRUPTING_SIGNALS, ids=lambda s: s.name)
def test_each_signal_unwinds_the_command_and_ends_it_with_one_line_naming_it(sig, handlers):
    steps: list[str] = []
    done = CliRunner().invoke(command(steps), [sig.name])
    assert steps == ["cleaned up"]
    assert done.exit_code == SIGNAL_EXIT_BASE + sig
    assert done.output.splitlines() == [
        f"interrupted by {sig.name}: stopped, and its partial output was removed; nothing was left"
    ]
    assert {s: signal.getsignal(s) for s in INTERRUPTING_SIGNALS} == handlers  # only for the command's duration


def test_ctrl_c_again_during_the_cleanup_ends_it_and_says_what_may_be_left(handlers):
    steps: list[str] = []
    done = CliRunner().invoke(command(steps, again=signal.SIGINT), ["SIGTERM"])
    assert steps == []  # Python's own Ctrl-C was back, and cut the cleanup short
    assert done.exit_code == SIGNAL_EXIT_BASE + signal.SIGINT
    assert done.output.splitlines() == [
        "interrupted by SIGINT again before the cleanup finished: partial output may be left beside the "
        "destination; the next run writing it removes it"
    ]


def test_what_a_writer_notes_it_kept_replaces_nothing_was_left(handlers):
    app = typer.Typer()

    @app.command()
    @handle_interrupts
    def write() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(WORK_S)
        except KeyboardInterrupt as exc:  # as a commit the interrupt reached once its output had its name
            exc.add_note("out had been written in full before that, and is kept")
            raise

    done = CliRunner().invoke(app, [])
    assert done.exit_code == SIGNAL_EXIT_BASE + signal.SIGTERM
    assert done.output.splitlines() == [
        "interrupted by SIGTERM: stopped, and its partial output was removed; "
        "out had been written in full before that, and is kept"
    ]


@pytest.mark.parametrize("lost", [errno.EIO, errno.EPIPE], ids=errno.errorcode.get)
def test_output_that_fails_during_the_unwinding_still_ends_it_as_interrupted(handlers, lost):
    """After SIGHUP a write to the closed terminal (a progress bar's last refresh) fails with EIO,
    and to a pipe whose reader went with it with EPIPE; the error replaces the interrupt."""
    steps: list[str] = []
    app = typer.Typer()

    @app.command()
    @handle_errors
    @handle_interrupts
    def write() -> None:
        try:
            try:
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(WORK_S)
            finally:
                raise OSError(lost, os.strerror(lost))
        finally:
            steps.append("cleaned up")

    done = CliRunner().invoke(app, [])
    assert steps == ["cleaned up"]
    assert done.exit_code == SIGNAL_EXIT_BASE + signal.SIGHUP and isinstance(done.exception, SystemExit)
    assert done.output.splitlines() == [
        "interrupted by SIGHUP: stopped, and its partial output was removed; nothing was left"
    ]


def test_an_os_error_without_an_interrupt_is_not_taken_for_one(handlers):
    app = typer.Typer()

    @app.command()
    @handle_interrupts
    def write() -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    done = CliRunner().invoke(app, [])
    assert isinstance(done.exception, OSError) and done.exception.errno == errno.EIO


def test_a_signal_the_command_was_started_to_ignore_stays_ignored(handlers):
    steps: list[str] = []
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts it
    app = typer.Typer()

    @app.command()
    @handle_interrupts
    def write() -> None:
        os.kill(os.getpid(), signal.SIGHUP)
        steps.append("finished")

    done = CliRunner().invoke(app, [])
    assert done.exit_code == 0 and steps == ["finished"]
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
