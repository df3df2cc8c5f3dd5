"""Three schemas were renamed from ``remotegnn.*`` to ``memorybridge.*``: a file written under a
former name still loads, through the readers that read it, and is written back under the current name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from contracts import testbed as bed
from contracts.partition import OLDER_PARTITION_KIND, PARTITION_KIND, PartitionMeta, PartQuality
from contracts.runs import OLDER_TESTBED_RUNS_KIND, TESTBED_RUNS_KIND, RunsFile
from contracts.testbed import OLDER_TESTBED_KIND, TESTBED_KIND
from fullgraph.partitioner import PARTITION_FILE, open_partition
from testbed import runs, state

ROOT = Path(__file__).resolve().parents[2]
RECORDED_RUNS = ROOT / "benchmarks" / "results" / "fidelity-runs.json"  # written under the former names


def partition() -> PartitionMeta:
    quality = [PartQuality(part=p, inner_nodes=5, halo_nodes=1, shared_nodes=1, edges=8, cut_edges=1) for p in (0, 1)]
    return PartitionMeta(
        dataset="toy", num_nodes=10, num_edges=16, feature_dim=4, feature_dtype="float32", num_classes=2, parts=2,
        method="random", seed=0, cut_edges=2, boundary_rows=2, quality=quality, boundary_digests=["a", "b"],
    )  # fmt: skip


def test_the_current_names_are_the_projects_not_a_packages():
    assert {PARTITION_KIND, TESTBED_KIND, TESTBED_RUNS_KIND} == {
        "memorybridge.partition",
        "memorybridge.testbed",
        "memorybridge.testbed-runs",
    }
    assert (partition().kind, state.plan(bed.TestbedSpec(name="mbtb-abc123"), None, None).kind, RunsFile().kind) == (
        PARTITION_KIND,
        TESTBED_KIND,
        TESTBED_RUNS_KIND,
    )


def test_a_partition_manifest_of_the_former_name_loads_as_the_current_one(tmp_path):
    written = partition()
    document = written.model_dump(mode="json")
    (tmp_path / PARTITION_FILE).write_text(json.dumps({**document, "kind": OLDER_PARTITION_KIND}))
    assert open_partition(tmp_path) == written
    assert open_partition(tmp_path).model_dump(mode="json")["kind"] == PARTITION_KIND


def test_a_testbed_state_of_the_former_name_loads_as_the_current_one(tmp_path):
    planned = state.plan(bed.TestbedSpec(name="mbtb-abc123"), None, None)
    path = state.save(planned, tmp_path)
    path.write_text(json.dumps({**json.loads(path.read_text()), "kind": OLDER_TESTBED_KIND}))
    assert state.load(tmp_path, planned.name) == planned


def test_a_recorded_runs_file_of_the_former_names_loads_and_is_appended_to_under_the_current_ones(tmp_path):
    recorded = json.loads(RECORDED_RUNS.read_text())
    assert recorded["kind"] == OLDER_TESTBED_RUNS_KIND
    assert {run["testbed"]["kind"] for run in recorded["runs"]} == {OLDER_TESTBED_KIND}
    path = tmp_path / "runs.json"
    shutil.copy(RECORDED_RUNS, path)
    loaded = RunsFile.model_validate_json(path.read_text())
    runs.append(path, loaded.runs[0])
    rewritten = json.loads(path.read_text())
    assert rewritten["kind"] == TESTBED_RUNS_KIND
    assert [run["testbed"]["kind"] for run in rewritten["runs"]] == [TESTBED_KIND] * (len(recorded["runs"]) + 1)
    assert RunsFile.model_validate(rewritten).runs == [*loaded.runs, loaded.runs[0]]


@pytest.mark.parametrize("kind", ["remotegnn.plan", "memorybridge.partitions", "remotegnn.partition ", None])
def test_any_other_name_is_still_refused(kind):
    with pytest.raises(ValidationError, match="kind"):
        PartitionMeta.model_validate({**partition().model_dump(mode="json"), "kind": kind})
