"""Plan files: invalid ones are refused with the field named, nothing is half-written."""

from __future__ import annotations

import json

import pytest

from contracts.plan import PlanRequest, read_plan
from foundation.errors import InputFileError


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
