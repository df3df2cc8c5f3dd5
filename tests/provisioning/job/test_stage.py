"""Staging a dataset on the data machines: rsync from a local directory, or `remotegnn fetch` from a
moto S3 server run by the machines themselves; verified before it takes the dataset's name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import boto3
import pytest

from foundation.errors import UsageError
from provisioning.job import stage
from provisioning.job.stage import DatasetSource, StagingError
from tests.moto_server import running_moto

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
