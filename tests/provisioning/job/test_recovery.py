"""Replacing a lost machine against moto in server mode: EC2 says which machine is gone and why,
and `up`, run again from what it kept, puts a machine of the same type in its place in the same
zone and placement group, re-attaches its data volume and rewrites the state file and hostfile."""

from __future__ import annotations

from pathlib import Path

import pytest

from provisioning import launch, statefile, teardown
from provisioning.errors import ProvisioningError
from provisioning.job import recovery
from tests.provisioning.conftest import live_instances


def test_a_terminated_memory_machine_is_named_and_replaced_with_its_volume(aws, moto, two_level_plan, make_options):
    first = launch.up(aws, two_level_plan, make_options()).state
    assert recovery.lost_nodes(aws, first) == {}
    lost = next(n for n in first.nodes if n.node == "memory-1")
    moto.ec2.terminate_instances(InstanceIds=[lost.instance_id])
    found = recovery.lost_nodes(aws, first)
    assert list(found) == ["memory-1"] and lost.instance_id in found["memory-1"]
    with pytest.raises(recovery.MachineLost, match="memory-1"):
        recovery.check(aws, first)

    said: list[str] = []
    second = recovery.replace_lost(aws, moto.state_dir, first, said.append)
    replaced = next(n for n in second.nodes if n.node == "memory-1")
    assert replaced.instance_id != lost.instance_id and replaced.instance_type == lost.instance_type
    assert replaced.volume_id == lost.volume_id  # the data volume outlived its machine
    assert {n.node: n.instance_id for n in second.nodes if n.node != "memory-1"} == {
        n.node: n.instance_id for n in first.nodes if n.node != "memory-1"
    }
    assert second.availability_zone == first.availability_zone and second.placement_group == first.placement_group
    assert moto.placement_groups.launches[-1] == (first.placement_group, first.availability_zone)
    assert statefile.read(moto.state_dir, "c1") == second
    assert f"{replaced.private_ip} slots=1" in statefile.hostfile_path(moto.state_dir, "c1").read_text()
    assert recovery.lost_nodes(aws, second) == {} and len(live_instances(moto)) == 3
    teardown.down(aws, "c1")
    assert statefile.remove(moto.state_dir, "c1")
    assert not statefile.launch_inputs_path(moto.state_dir, "c1").exists()


def test_a_lost_learner_is_replaced_too(aws, moto, two_level_plan, make_options):
    first = launch.up(aws, two_level_plan, make_options()).state
    learner = next(n for n in first.nodes if n.role == "learner")
    moto.ec2.terminate_instances(InstanceIds=[learner.instance_id])
    second = recovery.replace_lost(aws, moto.state_dir, first, lambda _: None)
    new = next(n for n in second.nodes if n.role == "learner")
    assert new.instance_id != learner.instance_id and new.instance_type == learner.instance_type
    assert second.wheel == first.wheel  # the replacement boots the same wheel, by its sha256
    teardown.down(aws, "c1")


def test_without_what_up_kept_the_replacement_is_refused_with_the_way_out(aws, moto, two_level_plan, make_options):
    state = launch.up(aws, two_level_plan, make_options()).state
    statefile.launch_inputs_path(moto.state_dir, "c1").unlink()
    with pytest.raises(ProvisioningError, match="`provision up` again with its plan file"):
        recovery.replace_lost(aws, moto.state_dir, state, lambda _: None)
    teardown.down(aws, "c1")


def test_a_new_learner_gets_the_jobs_directory_as_last_copied_home_and_a_kept_one_keeps_its_own(
    tmp_path, remote, layout
):
    """Through the ssh stand-in: the copy home (checkpoints included) goes to a replaced learner's
    job directory; a learner that was not replaced keeps its directory, newer than the copy home."""
    from provisioning.job.runner import Job

    state = remote.state
    job = Job(remote, layout, state, "job1", tmp_path / "home", lambda _: None, lambda _: None)
    home_copy = tmp_path / "home" / "job1" / "ckpt"
    home_copy.mkdir(parents=True)
    (home_copy / "checkpoint-000000004.pt").write_bytes(b"saved")
    on_learner = Path(job.directory)

    kept = job.moved(remote, state)  # a memory machine was replaced: the learner's files stay its own
    assert kept.restarted and not on_learner.exists()

    new_learner = state.nodes[0].model_copy(update={"instance_id": "i-replacement"})
    new_state = state.model_copy(update={"nodes": [new_learner, *state.nodes[1:]]})
    moved = job.moved(remote, new_state)
    assert moved.restarted and moved.directory == job.directory
    assert (on_learner / "ckpt" / "checkpoint-000000004.pt").read_bytes() == b"saved"
