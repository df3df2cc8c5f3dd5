"""benchmarks/flows.py: Open MPI opens the flows `remotegnn launch --flows` asks for, and a large
message is striped over them with the first carrying two shares (what the planner prices)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.mpi]

ROOT = Path(__file__).resolve().parents[2]


def test_a_message_is_striped_over_the_flows_asked_for(mpi):
    if shutil.which("ss") is None:
        pytest.skip("needs iproute2's ss to read each connection's bytes")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "flows.py"), "--flows", "1,3", "--mb", "16"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    one, three = json.loads(done.stdout)["rows"]
    assert one["connections"] == 1 and one["effective_flows"] == 1.0
    assert three["connections"] == 3 and sum(three["mb_per_connection"]) == pytest.approx(2 * 16 * 1.048576, rel=0.01)
    assert three["effective_flows"] == pytest.approx((3 + 1) / 2, rel=0.05)  # pipeline.effective_flows
