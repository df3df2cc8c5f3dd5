"""A real command line stopped mid-write as users stop one - Ctrl-C (SIGINT), `timeout`, systemd or
a job scheduler (SIGTERM), a closed terminal or ssh session (SIGHUP) - and what it must leave:
nothing beside its destination, and one line that says so. And what SIGKILL or a power loss
leaves instead, for the next run to find: a partial directory and its writer's record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from foundation.fileio import write_model
from foundation.partial import NEW, OWNER_FILE, PartialOwner
from remotegnn.synth import SynthSpec, synth

BIN = Path(sys.executable).parent
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNAL_EXIT_BASE = 128
POLL_S = 0.01  # how often the destination's directory is looked at
STARTED_S = 120.0  # deadline for the command to start writing (imports, numba's cache, a loaded machine)
ENDED_S = 60.0  # deadline for it to clean up and exit once signalled
MEDIUM = SynthSpec(nodes=300_000, edges=2_400_000, dim=32, classes=8)  # seconds of writing for a command reading it


def medium_dataset(folder: Path) -> Path:
    """A dataset that commands reading it (reorder, partition, slice, a fetch of it) spend
    seconds writing out again, so a signal finds them mid-write."""
    path = folder / "g"
    synth(MEDIUM, path, progress=False)
    return path


def default_signals() -> None:
    """In the child: the three signals at their defaults, as a terminal starts a command, whatever
    this test run inherited (nohup, a background job's ignored SIGINT)."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def start(tool: str, *args: object, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / tool), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else {**os.environ, **env},
        preexec_fn=default_signals,
    )


def partials(dst: Path) -> list[Path]:
    """Every partial directory beside ``dst``, whoever's."""
    return sorted(path for path in dst.parent.iterdir() if path.name.endswith(".partial"))


def wait_until_writing(process: subprocess.Popen, dst: Path) -> None:
    """Return once a partial directory of the command holds its writer's record and its output
    has begun (something inside NEW)."""
    deadline = time.monotonic() + STARTED_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the command ended before it wrote anything: {process.communicate()[1]}")
        for path in partials(dst):
            try:
                begun = (path / OWNER_FILE).is_file() and any((path / NEW).iterdir())
            except FileNotFoundError:  # gone between the listing and the look inside, or NEW not yet made
                continue
            if begun:
                return
        time.sleep(POLL_S)
    process.kill()
    pytest.fail(f"no partial directory of {dst} filled within {STARTED_S:.0f} s")


def interrupt_mid_write(
    sig: signal.Signals, tool: str, *args: object, dst: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run ``tool args`` writing ``dst``, send ``sig`` once it is writing, and check what it left."""
    before = sorted(os.listdir(dst.parent))
    process = start(tool, *args, env=env)
    wait_until_writing(process, dst)
    process.send_signal(sig)
    try:
        stdout, stderr = process.communicate(timeout=ENDED_S)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"{tool} did not end within {ENDED_S:.0f} s of {sig.name}: {process.communicate()[1]}")
    assert process.returncode == SIGNAL_EXIT_BASE + sig, stderr
    assert f"interrupted by {sig.name}" in stderr and "nothing was left" in stderr
    assert "Traceback" not in stderr
    assert not dst.exists()
    assert sorted(os.listdir(dst.parent)) == before  # no partial directory, no temp file
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def left_by(dst: Path, owner: PartialOwner | None, tag: str = "killed00") -> Path:
    """A half-written partial directory of ``dst`` as a writer recorded as ``owner`` leaves it
    when SIGKILLed (None: one that recorded no writer)."""
    path = dst.parent / f".{dst.name}.{tag}.partial"
    path.mkdir()
    (path / "features.npy").write_bytes(b"half a matrix")
    if owner is not None:
        write_model(path / OWNER_FILE, owner)
    return path


def this_process() -> PartialOwner:
    return PartialOwner.of_process(os.getpid())


def exited_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


@contextmanager
def running_process() -> Iterator[subprocess.Popen]:
    """A process that runs until the block ends (it waits for its standard input to close)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        yield child
    finally:
        child.communicate()
