"""Dataset profiles: the built-ins match the published figures; bad profiles are refused clearly."""

from __future__ import annotations

import json

import pytest

from contracts.profile import DatasetProfile, load_profile
from foundation.errors import InputFileError, NotFoundError, UsageError
from planner.datasets.builtin import BUILTIN, builtin_profile


def test_papers100m_sizes_match_the_published_figures():
    p = builtin_profile("papers100M")
    assert p.feature_bytes / 1e9 == pytest.approx(56.86, abs=0.01)  # facts.md
    # One CSR direction with int32 indices: 7.35 GB (facts.md); CSR + CSC twice that.
    assert p.structure_bytes / 2 / 1e9 == pytest.approx(7.35, abs=0.01)
    assert p.curve("degree").hit_rate(0.10) == pytest.approx(0.445)  # seed 004: top 10% hold 44.5%


def test_mag240m_features_are_fp16_papers_only():
    assert builtin_profile("mag240m").feature_bytes / 1e9 == pytest.approx(187, abs=0.5)


def test_every_builtin_has_a_sound_degree_curve():
    for profile in BUILTIN.values():
        curve = profile.curve("degree")
        assert curve.hit_rate(0.0) == 0.0 and curve.hit_rate(1.0) == 1.0
        assert curve.hit_rate(0.1) >= 0.1  # caching the hottest nodes beats caching at random


def test_names_are_case_insensitive_and_unknown_ones_suggest():
    assert builtin_profile("PAPERS100m").name == "papers100M"
    with pytest.raises(NotFoundError, match="Did you mean products"):
        builtin_profile("prodcts")


def test_missing_policy_curve_is_a_usage_error():
    with pytest.raises(UsageError, match="presample"):
        builtin_profile("arxiv").curve("presample")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"num_train": 10**9}, "num_train"),
        ({"cache_curves": {"presample": [[0.1, 0.5]]}}, "degree"),
        ({"cache_curves": {"degree": [[0.2, 0.5], [0.1, 0.6]]}}, "increase"),
        ({"cache_curves": {"degree": [[0.1, 0.6], [0.2, 0.5]]}}, "decrease"),
        ({"cache_curves": {"degree": [[1.5, 0.5]]}}, "0 < x"),
        ({"feature_dtype": "int8"}, "feature_dtype"),
        ({"schema_version": 2}, "schema_version"),
        ({"num_nodes": -1}, "num_nodes"),
    ],
)
def test_bad_profile_files_name_the_problem(tmp_path, change, field):
    data = builtin_profile("arxiv").model_dump(mode="json")
    data.update(change)
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputFileError, match=field):
        load_profile(path)


def test_profile_round_trips_through_json(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(builtin_profile("papers100M").model_dump_json())
    assert load_profile(path) == builtin_profile("papers100M")
    assert DatasetProfile.model_json_schema()["properties"]["schema_version"]["const"] == 1
