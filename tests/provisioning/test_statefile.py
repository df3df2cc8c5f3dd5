"""The state file and the hostfile: formats, atomic writes (an interrupted write keeps the old file)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from contracts.cluster import ClusterState, NodeState
from foundation.errors import InputFileError, UsageError
from provisioning import statefile


def state(tmp_path, ip: str = "10.0.0.5") -> ClusterState:
    node = dict(arch="x86_64", market="on-demand", public_ip=None, gpus=0, slots=1)
    return ClusterState(
        name="c1",
        region="us-east-1",
        availability_zone="us-east-1a",
        plan_id="p",
        plan_rank=0,
        plan_label="g5.12xlarge + 2x r6in.2xlarge",
        usd_per_hour=7.1,
        predicted_total_usd=3.2,
        security_group_id="sg-1",
        key_name="memorybridge-c1",
        placement_group="memorybridge-c1-us-east-1a",
        ssh_user="ec2-user",
        hostfile=str(tmp_path / "c1.hostfile"),
        written_at=dt.datetime(2026, 11, 20, tzinfo=dt.UTC),
        nodes=[
            NodeState(
                **{**node, "gpus": 4, "slots": 4},
                node="learner-0",
                role="learner",
                instance_id="i-1",
                instance_type="g5.12xlarge",
                private_ip=ip,
                usd_per_hour=5.7,
            ),
            NodeState(
                **node,
                node="memory-0",
                role="memory",
                instance_id="i-2",
                instance_type="r6in.2xlarge",
                private_ip="10.0.0.6",
                usd_per_hour=0.7,
                volume_id="vol-1",
            ),
            NodeState(
                **node,
                node="memory-1",
                role="memory",
                instance_id="i-3",
                instance_type="r6in.2xlarge",
                private_ip="10.0.0.7",
                usd_per_hour=0.7,
                volume_id="vol-2",
            ),
        ],
    )


def test_round_trip_and_open_mpi_hostfile(tmp_path):
    s = state(tmp_path)
    path = statefile.write(tmp_path, s)
    assert path == tmp_path / "c1.json" and statefile.read(tmp_path, "c1") == s
    lines = (tmp_path / "c1.hostfile").read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        "10.0.0.6 slots=1",
        "10.0.0.7 slots=1",
        "10.0.0.5 slots=4",
    ]  # memory first, as launch ranks
    assert all(line.startswith("# ") for line in lines[:2])


def test_an_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch):
    statefile.write(tmp_path, state(tmp_path))
    old = (tmp_path / "c1.json").read_bytes()
    written = []

    def crash(src, dst):  # the process dies after the temp file is complete, before the rename
        written.append(Path(src).read_bytes())
        raise OSError("killed")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="killed"):
        statefile.write(tmp_path, state(tmp_path, ip="10.9.9.9"))
    monkeypatch.undo()
    assert b"10.9.9.9" in written[0]  # the new content had been written in full to the temp file
    assert (tmp_path / "c1.json").read_bytes() == old and statefile.read(tmp_path, "c1") == state(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c1.hostfile", "c1.json"]  # no temp file left


def test_a_broken_state_file_is_an_input_error_and_absent_is_none(tmp_path):
    assert statefile.read(tmp_path, "c1") is None
    (tmp_path / "c1.json").write_text('{"kind": "memorybridge.cluster"')
    with pytest.raises(InputFileError, match="cluster state file"):
        statefile.read(tmp_path, "c1")


def test_remove(tmp_path):
    statefile.write(tmp_path, state(tmp_path))
    assert statefile.remove(tmp_path, "c1") and list(tmp_path.iterdir()) == []
    assert not statefile.remove(tmp_path, "c1")


def test_an_unusable_state_dir_fails_early(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UsageError, match="--state-dir"):
        statefile.check_writable(blocker / "clusters")
