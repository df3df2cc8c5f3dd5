"""Finding a cluster by its tags, and id sets."""

from __future__ import annotations

from provisioning import bringup, teardown
from provisioning.inventory import ResourceIds, cluster_names, discover


def test_resource_id_sets():
    a = ResourceIds(instances=["i-1"], security_groups=["sg-1"])
    b = ResourceIds(instances=["i-1", "i-2"], key_pairs=["k"])
    merged = a.merge(b)
    assert merged.instances == ["i-1", "i-2"] and merged.key_pairs == ["k"] and merged.security_groups == ["sg-1"]
    assert merged.minus(a).entries() == [("instances", "i-2"), ("key_pairs", "k")]
    assert merged.zonal().labels() == ["instance i-1", "instance i-2"]
    assert ResourceIds().is_empty() and not a.is_empty()
    assert a.labels() == ["instance i-1", "security-group sg-1"]


def test_discover_and_list_clusters(aws, moto, two_level_plan, make_options):
    assert cluster_names(aws) == [] and discover(aws, "c1").is_empty()
    bringup.up(aws, two_level_plan, make_options())
    bringup.up(aws, two_level_plan, make_options(cluster="c2"))
    assert cluster_names(aws) == ["c1", "c2"]
    found = discover(aws, "c1")
    assert (len(found.instances), len(found.security_groups), len(found.placement_groups), len(found.key_pairs)) == (
        3,
        1,
        1,
        1,
    )
    assert len([v for v in found.volumes if v["Attachments"]]) == 5  # 3 root + 2 data volumes
    teardown.down(aws, "c1")
    assert cluster_names(aws) == ["c2"]
    teardown.down(aws, "c2")
