"""`remotegnn fetch` against a moto S3 server: a whole dataset, or one memory machine's part of it
(the structure whole, its feature rows at their offsets in a sparse file, ``shard.json``), kept
when intact, refilled when another part or the whole is asked for, refused when damaged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import boto3
import numpy as np
import pytest
from typer.testing import CliRunner

from contracts.shards import ShardLayout, ShardManifest
from contracts.staging import FetchResult
from foundation.errors import UsageError
from remotegnn.cli.main import app
from remotegnn.errors import DatasetError
from remotegnn.store import GraphDataset
from remotegnn.store import fetch as fetching
from remotegnn.store import part as parts
from remotegnn.store.fetch import Part, fetch
from remotegnn.store.part import SHARD_FILE
from tests.moto_server import running_moto

BUCKET = "datasets"
URI = f"s3://{BUCKET}/graphs/g"
KEY = "testing"
REGION = "us-east-1"


@pytest.fixture(scope="module")
def moto_url():
    with running_moto() as url:
        yield url


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """20,000 rows of 128 bytes: 79-row stripes over four machines."""
    from remotegnn.synth import SynthSpec, synth

    path = tmp_path_factory.mktemp("src") / "g"
    synth(SynthSpec(nodes=20_000, edges=100_000, dim=32, classes=4, seed=3), path, progress=False)
    return path


@pytest.fixture
def s3(moto_url, source):
    client = boto3.client(
        "s3", endpoint_url=moto_url, region_name=REGION, aws_access_key_id=KEY, aws_secret_access_key=KEY
    )
    client.create_bucket(Bucket=BUCKET)
    for path in source.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"graphs/g/{path.relative_to(source).as_posix()}")
    yield client
    for listed in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=listed["Key"])
    client.delete_bucket(Bucket=BUCKET)


def features_of(path: Path) -> np.ndarray:
    return np.asarray(GraphDataset.open(path).features)


def check_part(path: Path, source: Path, manifest: ShardManifest) -> None:
    """The copy holds the structure as in ``source``, the part's rows, and zeros elsewhere."""
    whole, copy = GraphDataset.open(source), GraphDataset.open(path, verify=True)
    for role, entry in whole.meta.files.items():
        if role != "features":
            assert (path / entry.path).read_bytes() == (source / entry.path).read_bytes(), role
    held = np.zeros(whole.meta.num_nodes, dtype=np.bool_)
    if manifest.index is not None:
        for start, stop in manifest.layout.ranges(manifest.index):
            held[start:stop] = True
    features = np.asarray(copy.features)
    assert np.array_equal(features[held], np.asarray(whole.features)[held])
    assert not features[~held].any()
    assert copy.features_path.stat().st_size == whole.features_path.stat().st_size


def test_a_shard_holds_the_structure_and_its_rows_in_a_sparse_file(s3, source, tmp_path):
    dst = tmp_path / "g"
    done = fetch(s3, URI, dst, Part("striped", 4, 1))
    manifest = GraphDataset.open(dst).shard_manifest()
    assert manifest is not None and manifest.index == 1 and not manifest.structure_only
    assert manifest.layout == ShardLayout.of("striped", 4, 20_000, 128)
    check_part(dst, source, manifest)
    whole = sum(entry.bytes for entry in GraphDataset.open(source).meta.files.values())
    rows = manifest.shards[1].feature_bytes
    assert (done.copied, done.shard, done.shards, done.layout, done.dataset_bytes) == (True, 1, 4, "striped", whole)
    assert done.bytes == manifest.structure_bytes + rows + GraphDataset.open(dst).features_offset
    assert "part 1 of 4, striped" in done.sentence()
    features = GraphDataset.open(dst).features_path
    assert features.stat().st_blocks * 512 < 0.5 * features.stat().st_size  # holes where the other rows are
    again = fetch(s3, URI, dst, Part("striped", 4, 1))
    assert (again.copied, again.fetched_bytes, again.shard) == (False, 0, 1)


def test_runs_far_apart_are_read_apart_and_close_ones_together(s3, source, tmp_path, monkeypatch):
    """A range part is one run: about a quarter of the feature file read, not all of it."""
    meta = GraphDataset.open(source).meta
    features = meta.files["features"].bytes
    done = fetch(s3, URI, tmp_path / "r", Part("range", 4, 2))
    structure = parts.structure_bytes(meta)
    assert done.fetched_bytes - structure < 0.26 * features
    # No merging across gaps: every stripe its own GET, each written where it goes.
    monkeypatch.setattr(fetching, "READ_GAP", 0)
    done = fetch(s3, URI, tmp_path / "s", Part("striped", 4, 3))
    check_part(tmp_path / "s", source, GraphDataset.open(tmp_path / "s").shard_manifest())
    assert done.fetched_bytes - structure < 0.26 * features


@pytest.mark.parametrize("layout", ["modulo", "striped"])
def test_rows_within_one_read_are_written_and_the_bytes_between_them_are_not(s3, source, tmp_path, layout, monkeypatch):
    """Modulo rows are 128 bytes apart: read together, with zeros (never another machine's rows)
    between them; blocks of 65,000 bytes cut through rows."""
    monkeypatch.setattr(parts, "BLOCK_BYTES", 65_000)
    dst = tmp_path / layout
    fetch(s3, URI, dst, Part(layout, 3, 2))
    check_part(dst, source, GraphDataset.open(dst).shard_manifest())


def test_another_shard_over_a_part_keeps_the_structure_and_reads_the_features(s3, source, tmp_path):
    dst = tmp_path / "g"
    fetch(s3, URI, dst, Part("striped", 4, 0))
    kept = (dst / "csc" / "indices.npy").stat().st_ino
    done = fetch(s3, URI, dst, Part("striped", 4, 2))
    assert done.copied and done.shard == 2
    meta = GraphDataset.open(source).meta
    assert done.fetched_bytes <= meta.files["features"].bytes  # no structure file read again
    assert (dst / "csc" / "indices.npy").stat().st_ino == kept  # the same file, linked into the new copy
    check_part(dst, source, GraphDataset.open(dst).shard_manifest())


def test_a_whole_fetch_over_a_part_copies_the_whole_feature_file(s3, source, tmp_path):
    dst = tmp_path / "g"
    fetch(s3, URI, dst, Part("striped", 2, 1))
    done = fetch(s3, URI, dst)
    assert done.copied and done.shard is None and not (dst / SHARD_FILE).exists()
    assert done.fetched_bytes == GraphDataset.open(source).meta.files["features"].bytes
    GraphDataset.open(dst, verify=True)  # by meta.json's digests: the whole file
    assert np.array_equal(features_of(dst), features_of(source))
    again = fetch(s3, URI, dst)
    assert not again.copied


def test_a_whole_copy_already_there_serves_any_part(s3, source, tmp_path):
    dst = tmp_path / "g"
    fetch(s3, URI, dst)
    done = fetch(s3, URI, dst, Part("range", 3, 0))
    assert (done.copied, done.shard, done.fetched_bytes) == (False, None, 0)
    assert not (dst / SHARD_FILE).exists()
    done = fetch(s3, URI, dst, Part(index=None))
    assert (done.copied, done.structure_only) == (False, False)


def test_the_structure_alone_opens_as_a_dataset_with_no_rows(s3, source, tmp_path):
    dst = tmp_path / "g"
    done = fetch(s3, URI, dst, Part("striped", 2, None))
    assert done.structure_only and done.shard is None and "the structure alone" in done.sentence()
    manifest = GraphDataset.open(dst).shard_manifest()
    assert manifest is not None and manifest.structure_only and manifest.index is None
    check_part(dst, source, manifest)
    dataset = GraphDataset.open(dst)
    assert np.array_equal(dataset.csc.indptr, GraphDataset.open(source).csc.indptr)
    assert not fetch(s3, URI, dst, Part("striped", 2, None)).copied
    done = fetch(s3, URI, dst, Part("striped", 2, 0))  # a memory machine's part is more: copied
    assert done.copied and done.shard == 0


def test_a_damaged_part_fails_verify_and_is_copied_again(s3, source, tmp_path):
    dst = tmp_path / "g"
    fetch(s3, URI, dst, Part("range", 2, 1))
    dataset = GraphDataset.open(dst)
    with open(dataset.features_path, "r+b") as handle:  # a byte of a row the part holds
        handle.seek(dataset.features_offset + 15_000 * 128)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(DatasetError, match="checksum mismatch in the rows this part holds"):
        GraphDataset.open(dst, verify=True)
    done = fetch(s3, URI, dst, Part("range", 2, 1))
    assert done.copied
    check_part(dst, source, GraphDataset.open(dst).shard_manifest())


def test_a_shard_json_that_is_not_this_versions_is_refused(s3, tmp_path):
    dst = tmp_path / "g"
    fetch(s3, URI, dst, Part("striped", 2, 0))
    record = json.loads((dst / SHARD_FILE).read_text())
    (dst / SHARD_FILE).write_text(json.dumps(record | {"replicas": 2}))
    with pytest.raises(DatasetError, match="replicas"):
        GraphDataset.open(dst).shard_manifest()
    (dst / SHARD_FILE).write_text(json.dumps(record | {"index": 1, "features_blake2b": None}))
    with pytest.raises(DatasetError, match="no digest"):
        GraphDataset.open(dst).shard_manifest()
    record["layout"]["num_nodes"] = 10
    (dst / SHARD_FILE).write_text(json.dumps(record))
    with pytest.raises(DatasetError, match="another dataset"):
        GraphDataset.open(dst).shard_manifest()
    done = fetch(s3, URI, dst, Part("striped", 2, 0))  # not trusted: copied again
    assert done.copied and GraphDataset.open(dst).shard_manifest().index == 0


def test_a_feature_object_of_another_size_is_refused_and_nothing_is_left(s3, source, tmp_path):
    key = "graphs/g/" + GraphDataset.open(source).meta.files["features"].path
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"\x93NUMPY short")
    dst = tmp_path / "g"
    with pytest.raises(DatasetError, match="has 12 bytes but its meta.json says"):
        fetch(s3, URI, dst, Part("striped", 2, 0))
    assert list(tmp_path.iterdir()) == []


def test_a_feature_object_replaced_during_the_copy_stops_it(s3, source, tmp_path):
    """Every ranged GET names the ETag the copy started with: a new upload is never mixed in."""
    key = "graphs/g/" + GraphDataset.open(source).meta.files["features"].path
    data = bytearray((source / GraphDataset.open(source).meta.files["features"].path).read_bytes())
    data[-1] ^= 0xFF

    class Replacing:
        def __getattr__(self, name):
            return getattr(s3, name)

        def head_object(self, **kwargs):
            answer = s3.head_object(**kwargs)
            s3.put_object(Bucket=BUCKET, Key=key, Body=bytes(data))
            return answer

    dst = tmp_path / "g"
    with pytest.raises(DatasetError, match="was replaced while it was being copied"):
        fetch(Replacing(), URI, dst, Part("striped", 2, 0))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ((4, 4, None, False), "--shard: 4 is not one of the 4 memory machines"),
        ((0, 0, None, False), "--shards: give the number of memory machines, at least 1"),
        ((0, 2, "diagonal", False), "--layout: 'diagonal' is not a layout"),
        ((0, None, None, False), "--shard: give --shards K too"),
        ((None, 2, None, False), "--shards: give --shard I too"),
        ((None, None, "range", False), "--layout: give --shard I too"),
        ((1, 2, None, True), "--structure-only copies none of the rows"),
    ],
)
def test_bad_part_options_are_refused_naming_the_option(options, message):
    with pytest.raises(UsageError, match=message):
        Part.of_options(*options)


def test_part_options():
    assert Part.of_options(None, None, None, False) is None
    assert Part.of_options(1, 3, None, False) == Part("striped", 3, 1)
    assert Part.of_options(None, 3, "range", True) == Part("range", 3, None)


def test_the_command_fetches_a_shard_and_prints_what_it_did(s3, moto_url, source, tmp_path, monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": KEY,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL_S3": moto_url,
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }.items():
        monkeypatch.setenv(name, value)
    dst = tmp_path / "g"
    ran = CliRunner().invoke(
        app, ["fetch", URI, str(dst), "--shard", "2", "--shards", "3", "--layout", "range", "--json"]
    )
    assert ran.exit_code == 0, ran.output
    done = FetchResult.model_validate_json(ran.stdout)
    assert (done.shard, done.shards, done.layout, done.copied) == (2, 3, "range", True)
    ran = CliRunner().invoke(app, ["info", str(dst), "--verify"])
    assert ran.exit_code == 0, ran.output
    assert "part 2 of 3 (range)" in ran.stdout and f"{done.bytes:,}" in ran.stdout and "verified" in ran.stdout
    ran = CliRunner().invoke(app, ["fetch", URI, str(dst), "--shard", "3", "--shards", "3"])
    assert ran.exit_code == 2 and "--shard: 3 is not one of the 3 memory machines" in ran.output
    assert len(ran.output.strip().splitlines()) == 1


def test_held_ranges_start_with_the_header_and_follow_the_layout():
    manifest = ShardManifest.of(ShardLayout.of("range", 2, 10, 8), 8, 100).model_copy(update={"index": 1})
    assert parts.held_ranges(manifest, 128).tolist() == [[0, 128], [128 + 5 * 8, 128 + 10 * 8]]
    first = manifest.model_copy(update={"index": 0})
    assert parts.held_ranges(first, 128).tolist() == [[0, 128 + 5 * 8]]  # the header and row 0 touch
    alone = manifest.model_copy(update={"index": None, "structure_only": True})
    assert parts.held_ranges(alone, 128).tolist() == [[0, 128]]


def test_blocks_cover_the_ranges_and_their_masks_mark_the_held_bytes():
    ranges = np.array([[0, 10], [12, 20], [100, 130]], dtype=np.int64)
    found = list(parts.blocks(ranges, gap=5, block_bytes=8))
    assert [(b.start, b.stop) for b in found] == [
        (0, 8),
        (8, 16),
        (16, 20),
        (100, 108),
        (108, 116),
        (116, 124),
        (124, 130),
    ]
    marked = np.zeros(130, dtype=np.bool_)
    for block in found:
        marked[block.start : block.stop] |= block.mask()
    expected = np.zeros(130, dtype=np.bool_)
    for start, stop in ranges:
        expected[start:stop] = True
    assert np.array_equal(marked, expected)


def test_ctrl_c_while_the_rows_are_read_leaves_nothing(s3, source, tmp_path, monkeypatch):
    """Ctrl-C reaches the main thread while it waits on the GETs: the ones under way finish, the rest
    are dropped, and the partial directory goes."""
    import _thread
    import threading

    real, calls = fetching._Source._get, []

    def get(self, key, where, etag, size, start, stop):
        calls.append(start)
        if len(calls) == 3:
            _thread.interrupt_main()
        return real(self, key, where, etag, size, start, stop)

    monkeypatch.setattr(fetching, "READ_GAP", 0)
    monkeypatch.setattr(fetching._Source, "_get", get)
    with pytest.raises(KeyboardInterrupt):
        fetch(s3, URI, tmp_path / "g", Part("striped", 2, 0))
    assert list(tmp_path.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name.startswith("fetch")]
