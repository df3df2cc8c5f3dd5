"""`remotegnn shards`: each memory machine's rows, runs and bytes, as a table or the manifest."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from contracts.shards import ShardLayout, ShardManifest
from remotegnn.cli.main import app
from remotegnn.store import GraphDataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    from remotegnn.synth import SynthSpec, synth

    path = tmp_path_factory.mktemp("shards") / "g"
    synth(SynthSpec(nodes=10_000, edges=40_000, dim=16, classes=3, seed=1), path, progress=False)
    return path


def shards(*args: str):
    return CliRunner().invoke(app, ["shards", *args])


@pytest.mark.parametrize("layout", ["striped", "range", "modulo"])
def test_the_manifest_deals_every_row_once(dataset, layout):
    done = shards(str(dataset), "--memory-hosts", "3", "--layout", layout, "--json")
    assert done.exit_code == 0, done.output
    manifest = ShardManifest.model_validate_json(done.stdout)
    meta = GraphDataset.open(dataset).meta
    assert manifest.layout == ShardLayout.of(layout, 3, meta.num_nodes, meta.row_bytes)
    assert manifest.index is None and manifest.row_bytes == meta.row_bytes == 64
    assert sum(entry.rows for entry in manifest.shards) == meta.num_nodes
    assert manifest.structure_bytes == sum(e.bytes for role, e in meta.files.items() if role != "features")


def test_the_table_shows_each_machines_rows_runs_and_gigabytes(dataset):
    done = shards(str(dataset), "--memory-hosts", "4")
    assert done.exit_code == 0, done.output
    assert "striped over 4 memory machines" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.strip().startswith("│")]
    assert len(rows) == 4 and "2,520" in rows[0] and "│   63 │" in rows[0]  # 40-row blocks: 63 of them
    assert "each holds the structure whole" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--memory-hosts", "0"], "--memory-hosts: give the number of memory machines, at least 1"),
        (["--memory-hosts", "2", "--layout", "blocks"], "--layout: 'blocks' is not a layout"),
    ],
)
def test_bad_input_is_one_line_naming_the_option(dataset, args, message):
    done = shards(str(dataset), *args)
    assert done.exit_code == 2 and message in done.output
    assert len(done.output.strip().splitlines()) == 1


def test_a_directory_without_meta_is_named(tmp_path):
    done = shards(str(tmp_path), "--memory-hosts", "2")
    assert done.exit_code != 0 and "meta.json" in done.output
