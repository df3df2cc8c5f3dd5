"""Cluster names and the tags every resource carries."""

from __future__ import annotations

import pytest

from foundation.errors import UsageError
from provisioning import tags


@pytest.mark.parametrize("name", ["c1", "papers-100m", "a" * 40])
def test_good_names(name):
    assert tags.check_cluster_name(name) == name


@pytest.mark.parametrize("name", ["", "c", "1abc", "Abc", "a_b", "ab-", "a" * 41, "a b"])
def test_bad_names(name):
    with pytest.raises(UsageError, match="cluster name"):
        tags.check_cluster_name(name)


def test_cluster_tags():
    t = tags.cluster_tags("c1", "memory", "p1", 2, 0.69732, "att", node="memory-1")
    assert t == {
        tags.CLUSTER: "c1",
        tags.ROLE: "memory",
        tags.PLAN_ID: "p1",
        tags.PLAN_RANK: "2",
        tags.PRICE: "0.697320",
        tags.ATTEMPT: "att",
        tags.NODE: "memory-1",
        "Name": "memorybridge-c1-memory-1",
    }
    assert tags.tags_of({"Tags": [{"Key": k, "Value": v} for k, v in t.items()]}) == t
    assert tags.filters("c1", "att") == [
        {"Name": f"tag:{tags.CLUSTER}", "Values": ["c1"]},
        {"Name": f"tag:{tags.ATTEMPT}", "Values": ["att"]},
    ]
