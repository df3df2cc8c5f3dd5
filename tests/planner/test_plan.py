"""Plan files and requests: invalid ones are refused with the field named, nothing is half-written,
and a built-in dataset has one name however it is typed."""

from __future__ import annotations

import json

import pytest

from contracts.plan import Filters, PlanRequest, read_plan
from contracts.profile import BUILTIN_DATASETS
from foundation.errors import InputFileError
from planner.datasets.builtin import BUILTIN
from planner.solver.estimate import EstimateRequest
from planner.solver.recommend import recommend


def test_missing_plan_file(tmp_path):
    with pytest.raises(InputFileError, match="cannot be read"):
        read_plan(tmp_path / "nope.json")


def test_plan_with_wrong_schema_version_is_refused(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"kind": "memorybridge.plan", "schema_version": 99}))
    with pytest.raises(InputFileError, match="schema_version"):
        read_plan(path)


def test_request_needs_exactly_one_dataset_source():
    with pytest.raises(ValueError, match="exactly one"):
        PlanRequest()


@pytest.mark.parametrize("typed", ["papers100M", "papers100m", "PAPERS100M", "Papers100M"])
def test_a_built_in_dataset_named_in_any_case_is_requested_by_its_catalog_name(typed):
    assert PlanRequest(dataset=typed).dataset == "papers100M"
    assert EstimateRequest(dataset=typed, learner="g4dn.xlarge").dataset == "papers100M"


def test_an_unknown_dataset_name_is_kept_for_the_planner_to_report_with_close_matches():
    assert PlanRequest(dataset="paper100m").dataset == "paper100m"


def test_a_plan_file_that_spells_the_dataset_otherwise_reads_as_the_catalog_name(tmp_path):
    rec = recommend(PlanRequest(dataset="arxiv", filters=Filters(gpu_families=["g4dn"])))
    document = rec.model_dump(mode="json")
    document["request"]["dataset"] = "ArXiv"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(document))
    assert read_plan(path).request == rec.request


def test_every_built_in_profile_is_named_in_the_contract():
    assert tuple(BUILTIN) == BUILTIN_DATASETS
