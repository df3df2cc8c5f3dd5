"""foundation.process.start: what every entry point does first. Its exit skips the interpreter's
final collection, yet every exit handler still runs and what the process wrote is whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import atexit, logging, sys, tempfile
from pathlib import Path
from foundation import process

started_with = sys.argv[1] == "start"
if started_with:
    process.start()
work = tempfile.TemporaryDirectory()  # removed by its own exit handler
atexit.register(print, "exit handler ran", flush=True)
Path(sys.argv[2]).write_text(work.name)


class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        print("cycle finalised", flush=True)


Cycle()  # garbage only a collection finds: the final one, unless start() exempted it
logging.getLogger("foundation.probe").info("logging set up" if started_with else "not shown")
"""


def probe(tmp_path, how: str) -> tuple[list[str], str]:
    named = tmp_path / f"{how}.txt"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, how, str(named)], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.splitlines(), done.stderr


def test_a_started_process_runs_its_exit_handlers_and_leaves_cycles_to_the_os(tmp_path):
    said, logged = probe(tmp_path, "start")
    assert said == ["exit handler ran"]
    assert logged == "foundation.probe: logging set up\n"
    assert not Path((tmp_path / "start.txt").read_text()).exists()


def test_without_start_the_final_collection_finalises_the_cycle(tmp_path):
    """The probe's control: the cycle above is one the interpreter's exit would collect."""
    said, logged = probe(tmp_path, "plain")
    assert said == ["exit handler ran", "cycle finalised"] and logged == ""
    assert not Path((tmp_path / "plain.txt").read_text()).exists()
