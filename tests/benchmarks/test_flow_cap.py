"""benchmarks/flow_cap.py on a real testbed: with each TCP flow capped, real batches over three
flows get about twice the cap ((3 + 1) / 2, Open MPI's striping), and the pipeline model predicts
the epoch. (One flow getting the cap: tests/testbed/test_network.py.)"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.root, pytest.mark.mpi, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_capped_flows_add_up_as_the_planner_prices_them(tmp_path):
    from testbed import system

    found = system.detect()
    for what, part in (("root", found.root), ("network", found.network), ("MPI", found.mpi)):
        if not part.available:
            pytest.skip(f"the testbed needs {what}: {part.reason}")
    args = ["--flows", "3", "--link-gbit", "2", "--flow-gbit", "0.5", "--workdir", str(tmp_path / "work")]
    args += ["--state-dir", str(tmp_path / "state"), "--prefix", f"f{secrets.token_hex(3)}"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "flow_cap.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (three,) = json.loads(done.stdout)["rows"]
    assert (three["flows"], three["priced_link_gbit_per_s"]) == (3, 1.0)  # twice the 0.5 cap, half the link
    # measured 0.95 of the priced rate (TCP/IP headers take 4%)
    assert 0.8 <= three["gbit_per_s"] / three["priced_link_gbit_per_s"] <= 1.05, three
    assert three["predicted_epoch_s"] == pytest.approx(three["epoch_s"], rel=0.15), three
