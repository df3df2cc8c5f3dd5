"""`remotegnn profile` writes its profile JSON and its plot both or neither, so the line an
interrupt ends it with is true: nothing was left, or both files were written and are kept."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import remotegnn.cli.profile as profile_command
from remotegnn.cli.main import app  # every command registered, as the console script has them
from remotegnn.synth import SynthSpec, synth

SMALL = SynthSpec(nodes=1000, edges=5000, dim=4, classes=3)
SIGNAL_EXIT_BASE = 128
WORK_S = 60.0  # what the command would spend if the signal did not stop it
INTERRUPTED = "interrupted by SIGTERM: stopped, and its partial output was removed; "


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("profile") / "g"
    synth(SMALL, path, progress=False)
    return path


def profile(dataset: Path, folder: Path):
    return CliRunner().invoke(
        app,
        ["profile", str(dataset), "--fanout", "3,3", "--batch-size", "64"]
        + ["--output", str(folder / "profile.json"), "--plot", str(folder / "hits.png")],
    )


def interrupt() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(WORK_S)  # what the signal cuts short


def test_an_interrupt_while_the_files_are_written_waits_for_both_and_says_they_are_kept(dataset, tmp_path, monkeypatch):
    write = profile_command.atomic_write_bytes

    def write_then_interrupt(path, data):
        write(path, data)
        if path.name == "profile.json":  # the first of the two: a signal now would split them
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(profile_command, "atomic_write_bytes", write_then_interrupt)
    done = profile(dataset, tmp_path)
    assert done.exit_code == SIGNAL_EXIT_BASE + signal.SIGTERM
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hits.png", "profile.json"]
    kept = [
        f"{tmp_path / name} had been written in full before that, and is kept" for name in ("profile.json", "hits.png")
    ]
    assert done.output.splitlines() == [INTERRUPTED + "; ".join(kept)]


def test_an_interrupt_before_the_files_are_written_leaves_neither(dataset, tmp_path, monkeypatch):
    monkeypatch.setattr(profile_command, "_plot_png", lambda prof: interrupt())
    done = profile(dataset, tmp_path)
    assert done.exit_code == SIGNAL_EXIT_BASE + signal.SIGTERM
    assert list(tmp_path.iterdir()) == []
    assert done.output.splitlines() == [INTERRUPTED + "nothing was left"]
