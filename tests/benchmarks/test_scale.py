"""benchmarks/scale.py end to end on a small graph: made, profiled and planned, trained on a real
testbed with two memory hosts in two shard layouts, beside PyG's NeighborLoader. The figures of so small a run mean
nothing; what is checked is that every step ran and the report carries what the docs quote."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pyg_samplers import with_pyg_samplers

pytestmark = [pytest.mark.root, pytest.mark.mpi, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_small_rehearsal_reports_every_step(tmp_path):
    from testbed import system

    found = system.detect()
    for what, part in (("root", found.root), ("network", found.network), ("MPI", found.mpi)):
        if not part.available:
            pytest.skip(f"the testbed needs {what}: {part.reason}")
    pytest.importorskip("torch_sparse", reason="PyG's NeighborLoader samples with torch-sparse")
    args = ["--nodes", "16384", "--edges", "65536", "--dim", "16", "--batches", "2", "--min-ram-factor", "0"]
    args += ["--cache-gib", "0.001", "--volumes", "gp3-1000", "--work-dir", str(tmp_path / "work")]
    args += ["--memory-hosts", "2", "--layouts", "striped,modulo"]
    args += ["--state-dir", str(tmp_path / "state"), "--prefix", f"s{secrets.token_hex(3)}"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale.py"), *args, "--output", str(tmp_path / "scale.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=with_pyg_samplers(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    graph = report["graph"]
    assert graph["nodes"] == 16384 and graph["train_seeds"] == 2 * 1024 and graph["synth"]["peak_rss_mib"] > 0
    assert report["profile"]["peak_rss_mib"] >= report["profile"]["peak_anon_mib"] > 0 and report["plan"]["recommended"]
    volume = report["testbed"]["gp3-1000"]
    for layout in ("striped", "modulo"):
        run = volume[layout]
        (epoch,) = run["epoch"]
        (record,) = json.loads(Path(run["runs_file"]).read_text())["runs"]
        assert record["output"]["workload"]["shard_layout"] == layout  # what calibration prices the run in
        assert epoch["batches"] == 2 and epoch["measured_epoch_s"] > 0 and epoch["predicted_epoch_s"] > 0
        # A few MB load in milliseconds: the prediction rounds to 0.0 s here (the model has its own tests).
        assert epoch["measured_startup_s"] > 0 and epoch["predicted_startup_s"] >= 0
        reads = run["volume_reads"]
        assert set(reads) == {"m0", "m1"} and sum(h["share_bytes"] for h in reads.values()) == 16384 * 16 * 4
        probe = run["startup_probe"]  # one host's start-up reads on their own, in a blkio group
        assert (
            probe["read_bytes"] > 0 and probe["learner_rows"] > 0 and probe["share_bytes"] == reads["m0"]["share_bytes"]
        )
        hosts = {p["host"] for p in run["processes"]}
        assert {"l0", "m0", "m1"} <= hosts and all(p["peak_rss_mib"] > 0 for p in run["processes"])
    summary = volume["summary"]
    assert summary["modulo"]["job_startup_s_over_striped"] > 0 and summary["striped"]["host_read_over_share"] > 0
    pyg = report["pyg"]
    assert pyg["ran"] and pyg["batches"] == 2 and pyg["peak_rss_mib"] > 0
    assert report["parameters"]["learner_ram_gib"] == 16.0 and epoch["learner_cache_gib"] > 0  # auto, under the cap
    storage = report["graph"]["storage"]  # the graph lay in an image, each host reading its own view of it
    assert Path(storage["image"]).is_file() and graph["path"].startswith(storage["mountpoint"])
    structure = graph["bytes_on_disk"] - 16384 * 16 * 4  # every rank loads the whole structure: no host
    for layout in ("striped", "modulo"):  # found another's pages in a shared page cache
        assert all(h["read_bytes"] >= structure for h in volume[layout]["volume_reads"].values()), volume[layout]
    assert not Path(graph["path"]).exists()  # unmounted at the end, and every loop device of the image detached,
    # or set to detach at its last close where a mount namespace of another process still holds a copy of the mount
    attached = subprocess.run(["losetup", "--associated", storage["image"]], capture_output=True, text=True, check=True)
    loops = [line.split(":")[0] for line in attached.stdout.splitlines()]
    assert all(Path(f"/sys/block/{Path(loop).name}/loop/autoclear").read_text().strip() == "1" for loop in loops)
