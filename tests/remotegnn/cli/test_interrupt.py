"""`remotegnn synth`, `convert`, `reorder` and `fetch` stopped mid-write by SIGINT, SIGTERM or SIGHUP
leave nothing beside their destination and say so; the next run deals with what a killed one left."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import boto3
import numpy as np
import pytest

from foundation.partial import PartialOwner
from tests.interrupting import (
    ENDED_S,
    MEDIUM,
    POLL_S,
    SIGNAL_EXIT_BASE,
    SIGNALS,
    STARTED_S,
    default_signals,
    exited_pid,
    interrupt_mid_write,
    left_by,
    medium_dataset,
    running_process,
    start,
    this_process,
)
from tests.moto_server import running_moto

# Big enough to be still writing seconds after it starts (the whole job takes most of a minute).
BIG_SYNTH = ("--nodes", 2_000_000, "--edges", 20_000_000, "--dim", 16)
SMALL_SYNTH = ("--nodes", 1000, "--edges", 5000, "--dim", 4)
BUCKET = "datasets"
REGION = "us-east-1"
MOTO_KEY = "testing"  # moto takes any credentials
OK_S = 120  # a small command's deadline
READ_BYTES = 65536  # what is read of the terminal's output at a time
PROGRESS_BAR = b"drawing edges"  # what synth's first progress bar shows on a terminal


def _on_terminal() -> None:
    """In the child: the pty on its standard input as the controlling terminal of its new session,
    as a login shell or sshd runs a command, so closing the terminal hangs it up (SIGHUP)."""
    default_signals()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def read_until(terminal: int, text: bytes, process: subprocess.Popen) -> bytes:
    """What the command shows on ``terminal`` up to ``text``."""
    shown = b""
    deadline = time.monotonic() + STARTED_S
    while text not in shown:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {text!r} on the terminal within {STARTED_S:.0f} s: {shown[-500:]!r}")
        if select.select([terminal], [], [], POLL_S)[0]:
            shown += os.read(terminal, READ_BYTES)
    return shown


@pytest.fixture(scope="module")
def medium(tmp_path_factory) -> Path:
    return medium_dataset(tmp_path_factory.mktemp("medium"))


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_synth_stopped_by_each_signal_leaves_nothing_and_says_which(tmp_path, sig):
    interrupt_mid_write(sig, "remotegnn", "synth", tmp_path / "g", *BIG_SYNTH, dst=tmp_path / "g")


def test_synth_whose_terminal_is_closed_mid_write_leaves_nothing_and_ends_as_hung_up(tmp_path):
    """A closed terminal or ssh session sends SIGHUP, and from then on every write to the terminal
    fails (EIO), the progress bar's last refresh during the unwinding included: that failure must
    not replace the interrupt (a traceback, exit 1). The terminal is gone, so what tells is the
    exit status and what is left on disk."""
    dst = tmp_path / "g"
    terminal, command_side = os.openpty()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "remotegnn"), "synth", str(dst), *map(str, BIG_SYNTH)],
        stdin=command_side,
        stdout=command_side,
        stderr=command_side,
        start_new_session=True,
        preexec_fn=_on_terminal,
    )
    os.close(command_side)
    try:
        read_until(terminal, PROGRESS_BAR, process)  # writing, with a bar on the terminal
    finally:
        os.close(terminal)  # the terminal closes: SIGHUP
    assert process.wait(timeout=ENDED_S) == SIGNAL_EXIT_BASE + signal.SIGHUP
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_convert_stopped_mid_write_leaves_nothing(tmp_path):
    rng = np.random.default_rng(0)
    source = tmp_path / "in" / "graph.npz"
    source.parent.mkdir()
    edges = rng.integers(0, MEDIUM.nodes, size=(2, MEDIUM.edges))
    np.savez(source, edge_index=edges, x=rng.standard_normal((MEDIUM.nodes, MEDIUM.dim), dtype=np.float32))
    interrupt_mid_write(signal.SIGTERM, "remotegnn", "convert", source, tmp_path / "g", dst=tmp_path / "g")


@pytest.mark.slow
def test_reorder_stopped_mid_write_leaves_nothing(medium, tmp_path):
    interrupt_mid_write(signal.SIGTERM, "remotegnn", "reorder", medium, tmp_path / "r", dst=tmp_path / "r")


@pytest.mark.slow
@pytest.mark.moto
def test_fetch_stopped_mid_copy_leaves_nothing(medium, tmp_path):
    with running_moto() as url:
        env = {
            "AWS_ACCESS_KEY_ID": MOTO_KEY,
            "AWS_SECRET_ACCESS_KEY": MOTO_KEY,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL_S3": url,
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        }
        client = boto3.client(
            "s3", endpoint_url=url, region_name=REGION, aws_access_key_id=MOTO_KEY, aws_secret_access_key=MOTO_KEY
        )
        client.create_bucket(Bucket=BUCKET)
        for path in medium.rglob("*"):
            if path.is_file():
                client.upload_file(str(path), BUCKET, f"g/{path.relative_to(medium).as_posix()}")
        dst = tmp_path / "g"
        interrupt_mid_write(signal.SIGTERM, "remotegnn", "fetch", f"s3://{BUCKET}/g", dst, dst=dst, env=env)


def test_the_next_run_removes_what_a_killed_run_left_and_leaves_a_running_ones(tmp_path):
    dst = tmp_path / "g"
    killed = left_by(dst, this_process().model_copy(update={"pid": exited_pid()}))
    with running_process() as writing:
        running = left_by(dst, PartialOwner.of_process(writing.pid), "running0")
        done = start("remotegnn", "synth", dst, *SMALL_SYNTH)
        stdout, stderr = done.communicate(timeout=OK_S)
    assert done.returncode == 0, stderr
    assert not killed.exists() and f"removed {killed}" in stderr
    assert (running / "features.npy").exists()
    assert f"pid {writing.pid}, is still running" in stderr and f"rm -rf {running}" in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["g", running.name])
