"""Running a benchmark script as its users run it, for the tests of benchmarks/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_benchmark(script: str, *args: object, output: Path | None = None, timeout: int = 300) -> dict:
    """``python benchmarks/SCRIPT ARGS [--output OUTPUT]`` from the checkout's root: it must exit
    0, and what it prints is its report, which is also what it wrote to ``output`` when given."""
    argv = [sys.executable, str(ROOT / "benchmarks" / script), *map(str, args)]
    if output is not None:
        argv += ["--output", str(output)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    if output is not None:
        assert json.loads(output.read_text()) == report
    return report
