"""Staging a dataset on the data machines: rsync from a local directory, or `remotegnn fetch` from a
moto S3 server run by the machines themselves; verified before it takes the dataset's name."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import boto3
import numpy as np
import pytest

from contracts.staging import FetchResult
from foundation.errors import UsageError
from provisioning.job import stage
from provisioning.job.remote import Remote
from provisioning.job.stage import DatasetSource, StagingError
from remotegnn.store import GraphDataset
from tests.moto_server import running_moto
from tests.provisioning.job.conftest import cluster_state, write_script

BUCKET = "datasets"


def files_of(path: Path) -> dict:
    return json.loads((path / "meta.json").read_text())["files"]


def test_a_local_dataset_is_copied_verified_and_then_kept(remote, layout, small_dataset):
    said: list[str] = []
    target = stage.stage(remote, layout, DatasetSource.parse(str(small_dataset)), said.append)
    assert target == f"{layout.datasets_dir}/rmat11"
    assert files_of(Path(target)) == files_of(small_dataset)
    for entry in files_of(small_dataset).values():
        assert (Path(target) / entry["path"]).read_bytes() == (small_dataset / entry["path"]).read_bytes()
    assert not Path(target + stage.PARTIAL_SUFFIX).exists()
    assert said[-1] == f"memory-0: {target} copied and verified"  # the data machine only

    again: list[str] = []
    stage.stage(remote, layout, DatasetSource.parse(str(small_dataset)), again.append)
    assert again == [f"memory-0: {target} is already there and verified"]


def test_a_copy_that_does_not_match_its_checksums_is_refused_and_removed(remote, layout, small_dataset, tmp_path):
    damaged = tmp_path / "rmat11"
    shutil.copytree(small_dataset, damaged)
    features = damaged / files_of(damaged)["features"]["path"]
    data = bytearray(features.read_bytes())
    data[-1] ^= 0xFF  # same size, other bytes: only the checksum can tell
    features.write_bytes(bytes(data))
    with pytest.raises(StagingError, match="does not match its meta.json"):
        stage.stage(remote, layout, DatasetSource.parse(str(damaged)), lambda _: None)
    target = Path(layout.datasets_dir) / "rmat11"
    assert not target.exists() and not Path(str(target) + stage.PARTIAL_SUFFIX).exists()


def test_bad_sources_are_refused_before_anything_is_copied(tmp_path):
    with pytest.raises(UsageError, match="no meta.json"):
        DatasetSource.parse(str(tmp_path))
    with pytest.raises(UsageError, match="s3://BUCKET/PREFIX"):
        DatasetSource.parse("s3://only-a-bucket")


@pytest.fixture
def s3(monkeypatch):
    """A moto S3 server; the caller's credentials and endpoint as `provision run` reads them."""
    with running_moto() as url:
        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_S3": url,
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        }.items():
            monkeypatch.setenv(key, value)
        boto3.DEFAULT_SESSION = None
        client = boto3.client("s3", endpoint_url=url)
        client.create_bucket(Bucket=BUCKET)
        yield client
        boto3.DEFAULT_SESSION = None


def upload(client, dataset: Path, prefix: str) -> str:
    for path in dataset.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(dataset).as_posix()}")
    return f"s3://{BUCKET}/{prefix}"


def test_an_s3_dataset_is_fetched_by_the_machine_with_the_callers_credentials(remote, layout, small_dataset, s3):
    uri = upload(s3, small_dataset, "graphs/rmat11")
    credentials = stage.caller_credentials("us-east-1")
    assert json.loads(credentials)["aws_access_key_id"] == "testing"
    said: list[str] = []
    target = stage.stage(remote, layout, DatasetSource.parse(uri), said.append, credentials)
    assert files_of(Path(target)) == files_of(small_dataset)
    assert "verified" in said[-1]

    again: list[str] = []
    stage.stage(remote, layout, DatasetSource.parse(uri), again.append, credentials)
    assert again[-1].endswith("is already there and verified")


def test_an_s3_object_that_does_not_match_is_refused_and_nothing_is_left(remote, layout, small_dataset, s3):
    uri = upload(s3, small_dataset, "graphs/rmat11")
    labels = files_of(small_dataset)["labels"]["path"]
    data = bytearray((small_dataset / labels).read_bytes())
    data[-1] ^= 0x01
    s3.put_object(Bucket=BUCKET, Key=f"graphs/rmat11/{labels}", Body=bytes(data))
    with pytest.raises(StagingError, match="checksum mismatch"):
        stage.stage(remote, layout, DatasetSource.parse(uri), lambda _: None, stage.caller_credentials("us-east-1"))
    target = Path(layout.datasets_dir) / "rmat11"
    assert not target.exists() and not Path(str(target) + stage.PARTIAL_SUFFIX).exists()


def test_without_credentials_the_machine_says_what_it_could_not_read(remote, layout, small_dataset, s3, monkeypatch):
    upload(s3, small_dataset, "graphs/rmat11")
    wrong = json.dumps({"aws_access_key_id": "x", "aws_secret_access_key": "y", "endpoint_url": "http://127.0.0.1:9"})
    with pytest.raises(StagingError, match="cannot read s3://datasets/graphs/rmat11/meta.json"):
        stage.stage(remote, layout, DatasetSource.parse("s3://datasets/graphs/rmat11"), lambda _: None, wrong)


def test_a_learner_that_samples_its_own_batches_gets_the_dataset_too(remote, layout, small_dataset):
    said: list[str] = []
    target = stage.stage(remote, layout, DatasetSource.parse(str(small_dataset)), said.append, learner_samples=True)
    learner = next(n.node for n in remote.state.nodes if n.role == "learner")
    assert said[-1].startswith(f"{learner}: {target}")  # here both share one disk: it finds memory-0's copy
    assert any(line == f"memory-0: {target} copied and verified" for line in said)


# Stands in for ssh to machines with disks of their own: the machine's directory in the command
# becomes one per host (MACHINE-HOST), so each node's copy lands apart, as on a cluster.
SEPARATE_SSH = """#!/bin/bash
if [ "$1" = "-l" ]; then shift 2; fi
host="${{1#*@}}"
shift
command="$*"
shared={machine}
exec /bin/bash -c "${{command//"$shared"/"$shared-$host"}}"
"""


def remote_of(tmp_path: Path, ssh: str, memory: int) -> Remote:
    state = cluster_state(tmp_path / "c1.hostfile", memory=memory)
    return Remote.for_cluster(state, tmp_path / "known_hosts", None, ssh)


@pytest.fixture
def separate(tmp_path, layout, local_ssh) -> tuple[Remote, dict[str, Path]]:
    """A learner and two memory machines, each with its own datasets directory: node -> it."""
    machine = Path(layout.datasets_dir).parents[1]
    ssh = write_script(tmp_path / "separate-ssh", SEPARATE_SSH.format(machine=shlex.quote(str(machine))))
    remote = remote_of(tmp_path, str(ssh), memory=2)
    homes = {
        n.node: Path(f"{machine}-{n.private_ip}") / Path(layout.datasets_dir).relative_to(machine)
        for n in remote.state.nodes
    }
    return remote, homes


def test_each_memory_machine_fetches_its_part_and_a_sampling_learner_the_structure(separate, layout, small_dataset, s3):
    remote, homes = separate
    uri = upload(s3, small_dataset, "graphs/rmat11")
    said: list[str] = []
    credentials = stage.caller_credentials("us-east-1")
    stage.stage(
        remote, layout, DatasetSource.parse(uri), said.append, credentials, learner_samples=True, shard_layout="range"
    )
    for index in (0, 1):
        copy = GraphDataset.open(homes[f"memory-{index}"] / "rmat11", verify=True)
        manifest = copy.shard_manifest()
        assert manifest is not None and (manifest.index, manifest.layout.count, manifest.layout.layout) == (
            index,
            2,
            "range",
        )
        rows = slice(index * 1024, (index + 1) * 1024)  # range: one half each
        assert np.array_equal(copy.features[rows], GraphDataset.open(small_dataset).features[rows])
        assert not np.asarray(copy.features[slice((1 - index) * 1024, (2 - index) * 1024)]).any()
    learner = GraphDataset.open(homes["learner-0"] / "rmat11", verify=True)
    assert learner.shard_manifest().structure_only and not np.asarray(learner.features).any()
    assert any(line.startswith("memory-1: fetching") and "(part 1 of 2, range)" in line for line in said), said
    assert any(line.startswith("learner-0:") and "(the structure alone)" in line for line in said), said
    assert not any(stage.DISK_MARK in p.name for home in homes.values() for p in home.iterdir())

    again: list[str] = []
    stage.stage(remote, layout, DatasetSource.parse(uri), again.append, credentials, learner_samples=True,
                shard_layout="range")  # fmt: skip
    assert [line for line in again if "already there and verified" in line] == [
        f"{node}: {homes[node] / 'rmat11'} ({part}) is already there and verified"
        for node, part in [
            ("memory-0", "part 0 of 2, range"),
            ("memory-1", "part 1 of 2, range"),
            ("learner-0", "the structure alone"),
        ]
    ]


def test_machines_that_share_one_disk_each_get_the_whole_dataset(tmp_path, layout, local_ssh, small_dataset, s3):
    remote = remote_of(tmp_path, local_ssh, memory=2)
    uri = upload(s3, small_dataset, "graphs/rmat11")
    said: list[str] = []
    target = stage.stage(
        remote, layout, DatasetSource.parse(uri), said.append, stage.caller_credentials("us-east-1"),
        learner_samples=True,
    )  # fmt: skip
    assert "learner-0, memory-0, memory-1 share one disk" in said[0]
    copy = GraphDataset.open(target, verify=True)
    assert copy.shard_manifest() is None  # whole: every memory machine's rows are there
    assert said[-1] == f"learner-0: {target} is already there and verified"


def test_a_fetch_that_answers_with_another_part_is_refused():
    asked = stage.FetchPart(1, 2, "striped")
    done = FetchResult(source="s3://b/p", destination="/d", copied=True, files=12, bytes=1)
    assert asked.matches(done)  # a whole copy holds every part
    assert asked.matches(done.model_copy(update={"shard": 1, "shards": 2, "layout": "striped"}))
    assert not asked.matches(done.model_copy(update={"shard": 0, "shards": 2, "layout": "striped"}))
    assert not asked.matches(done.model_copy(update={"structure_only": True}))
    assert stage.FetchPart(structure_only=True).matches(done.model_copy(update={"structure_only": True}))


def test_only_several_memory_machines_fetch_parts():
    state = cluster_state(Path("/h"), memory=3)
    parts = stage.fetch_parts(state.nodes, "modulo")
    assert parts["memory-2"].options == ["--shard", "2", "--shards", "3", "--layout", "modulo"]
    assert parts["learner-0"].options == ["--structure-only", "--shards", "3", "--layout", "modulo"]
    one = cluster_state(Path("/h"), memory=1)
    assert [p.options for p in stage.fetch_parts(one.nodes, "striped").values()] == [
        ["--structure-only", "--shards", "1", "--layout", "striped"],
        [],
    ]
    alone = [n for n in one.nodes if n.role == "learner"]
    assert stage.fetch_parts(alone, "striped")["learner-0"].options == []
