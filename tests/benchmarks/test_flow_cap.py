"""benchmarks/flow_cap.py on a real testbed: with each TCP flow capped, real batches over one flow
get about the cap and over three flows about twice it ((3 + 1) / 2, Open MPI's striping), and the
pipeline model predicts both epochs."""

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
    args = ["--flows", "1,3", "--link-gbit", "2", "--flow-gbit", "0.5", "--workdir", str(tmp_path / "work")]
    args += ["--state-dir", str(tmp_path / "state"), "--prefix", f"f{secrets.token_hex(3)}"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "flow_cap.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    one, three = json.loads(done.stdout)["rows"]
    assert (one["flows"], one["priced_link_gbit_per_s"]) == (1, 0.5)
    assert (three["flows"], three["priced_link_gbit_per_s"]) == (3, 1.0)
    for row in (one, three):  # measured 0.95 of the priced rate (TCP/IP headers take 4%)
        assert 0.8 <= row["gbit_per_s"] / row["priced_link_gbit_per_s"] <= 1.05, row
        assert row["predicted_epoch_s"] == pytest.approx(row["epoch_s"], rel=0.15), row
    assert three["gbit_per_s"] / one["gbit_per_s"] == pytest.approx(2.0, rel=0.15)
