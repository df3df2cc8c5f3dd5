"""How `provision run` reaches a machine: ssh with host keys checked, or the command the user names."""

from __future__ import annotations

from provisioning.job.remote import Remote, learn_host_keys
from tests.provisioning.job.conftest import cluster_state

CONSOLE = """[   12.3] cloud-init[1234]: Cloud-init v. 22.2.2 running 'modules:final'
-----BEGIN SSH HOST KEY KEYS-----
ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY= root@ip-10-0-0-5
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl root@ip-10-0-0-5
-----END SSH HOST KEY KEYS-----
[   13.0] cloud-init[1234]: Cloud-init v. 22.2.2 finished
"""


def test_host_keys_are_read_from_the_console_for_every_address():
    lines = learn_host_keys(CONSOLE, ["54.1.2.3", "10.0.0.5"])
    assert lines == [
        "54.1.2.3,10.0.0.5 ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY=",
        "54.1.2.3,10.0.0.5 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    ]
    assert learn_host_keys("no keys printed here", ["10.0.0.5"]) == []


def test_ssh_checks_host_keys_in_the_clusters_own_file_and_never_prompts(tmp_path):
    state = cluster_state(tmp_path / "hostfile")
    remote = Remote.for_cluster(state, tmp_path / "known_hosts", tmp_path / "id_ed25519", None)
    argv = remote.argv(state.nodes[0], "true")
    options = " ".join(argv)
    assert argv[0] == "ssh" and argv[-2:] == ["ec2-user@10.0.0.2", "true"]
    assert f"UserKnownHostsFile={tmp_path / 'known_hosts'}" in options
    assert "StrictHostKeyChecking=accept-new" in options and "BatchMode=yes" in options
    assert f"-i {tmp_path / 'id_ed25519'}" in options


def test_the_ssh_command_replaces_ssh_and_its_options(tmp_path):
    state = cluster_state(tmp_path / "hostfile")
    remote = Remote.for_cluster(state, tmp_path / "known_hosts", None, "ssh -J bastion.example.org -p 2222")
    assert remote.argv(state.nodes[1], "hostname") == [
        "ssh", "-J", "bastion.example.org", "-p", "2222", "ec2-user@10.0.0.3", "hostname",
    ]  # fmt: skip
