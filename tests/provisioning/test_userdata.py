"""The boot script: valid bash, the volume steps only on data machines, pinned packages shell-quoted,
and the MemoryBridge wheel named by file and sha256, never taken from an index. Run in a stand-in
(stub dnf and Python, everything else real, paths under tmp_path), it installs the right wheel and
refuses a tampered one, saying why in its status. The ENA Express settings run as root in a network
namespace and leave its interface as ENA Express needs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from contracts.cluster import ShippedWheel
from provisioning.userdata import (
    BOOT_OK,
    ENA_EXPRESS_MTU,
    ENA_EXPRESS_TCP_LIMIT_OUTPUT_BYTES,
    NOTICE_AGENT_UNIT,
    ena_express_settings,
    render,
)
from provisioning.wheel import sha256_of
from tests.provisioning.boot_stand_in import LEARNER, MEMORY, PINS, StandIn, stand_in
from tests.provisioning.conftest import make_wheel
from tests.testbed.conftest import root_support  # noqa: F401  (a fixture, requested by name below)

WHEEL = ShippedWheel(file="memorybridge-0.1.0-py3-none-any.whl", sha256="ab" * 32, version="0.1.0")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("node", [MEMORY, LEARNER], ids=["memory", "learner"])
def test_scripts_are_valid_bash(node):
    script = render("c1", node, WHEEL, ["numpy==2; echo 'x'"])
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    assert script.startswith("#!/bin/bash\n")


def test_data_machines_mount_the_volume_and_others_do_not():
    memory, learner = render("c1", MEMORY, WHEEL, PINS), render("c1", LEARNER, WHEEL, PINS)
    assert "mkfs.xfs -L mbdata" in memory and "LABEL=mbdata /data xfs" in memory and "/data/datasets" in memory
    assert "mkfs" not in learner and "/data" not in learner.replace('"data_dir": null', "")


def test_node_json_names_the_cluster_node_and_role():
    script = render("c1", MEMORY, WHEEL, PINS)
    body = script.split("<<'NODE_JSON'\n", 1)[1].split("\nNODE_JSON", 1)[0]
    assert json.loads(body) == {"cluster": "c1", "node": "memory-0", "role": "memory", "data_dir": "/data"}


def test_pins_are_quoted_and_memorybridge_comes_only_as_the_checked_wheel():
    script = render("c1", LEARNER, WHEEL, ["numpy==2.4.6; rm -rf /", "torch==2.13.0"])
    assert "pip install 'numpy==2.4.6; rm -rf /' torch==2.13.0" in script
    assert WHEEL.file in script and WHEEL.sha256 in script
    installs = [line.split("pip install", 1)[1].split() for line in script.splitlines() if "pip install" in line]
    requirements = [word for words in installs for word in words if not word.startswith(("-", "/"))]
    assert not any(word.strip("'\"").lower().startswith("memorybridge") for word in requirements), installs
    assert any("--no-index" in words and words[-1].endswith("/" + WHEEL.file) for words in installs)


def booted_with(tmp_path: Path, given: Path | None = None) -> tuple[ShippedWheel, StandIn, subprocess.CompletedProcess]:
    """The stand-in booted for a wheel built here, with that wheel (or ``given``) where it waits."""
    built = make_wheel(tmp_path / "dist")
    wheel = ShippedWheel(file=built.name, sha256=sha256_of(built), version="0.1.0")
    boot = stand_in(tmp_path, wheel)
    Path(boot.paths.wheel_dir).mkdir(parents=True)
    shutil.copy(given or built, Path(boot.paths.wheel_dir) / built.name)
    return wheel, boot, subprocess.run(boot.command, env=boot.env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils' sha256sum")
def test_the_boot_installs_the_wheel_whose_sha256_it_names(tmp_path):
    wheel, boot, done = booted_with(tmp_path)
    assert done.returncode == 0, Path(boot.paths.init_log).read_text()
    assert Path(boot.paths.boot_status).read_text().strip() == BOOT_OK
    log = boot.pip_log.read_text().splitlines()
    assert log[-2] == "install " + " ".join(PINS)
    assert log[-1] == f"install --no-deps --no-index {boot.paths.wheel_dir}/{wheel.file}"
    assert (Path(boot.paths.etc_dir) / "version").read_text().strip() == "0.1.0"


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils' sha256sum")
def test_a_tampered_wheel_is_refused_and_the_status_says_why(tmp_path):
    tampered = make_wheel(tmp_path / "evil", requires=("evil==1",))  # same name, other bytes
    wheel, boot, done = booted_with(tmp_path, tampered)
    assert done.returncode == 1
    status = Path(boot.paths.boot_status).read_text().strip()
    assert status.startswith("failed: wheel sha256 mismatch") and wheel.sha256 in status
    assert sha256_of(tampered) in status
    assert "install --no-deps" not in boot.pip_log.read_text()  # never handed to pip


def test_only_machines_of_an_ena_express_plan_tune_their_interface_for_it():
    fast = MEMORY.model_copy(update={"ena_express": True})
    assert ena_express_settings() in render("c1", fast, WHEEL, PINS)
    assert f"mtu {ENA_EXPRESS_MTU}" not in render("c1", MEMORY, WHEEL, PINS)


def test_spot_machines_start_the_notice_agent_as_a_service_and_on_demand_ones_do_not():
    spot = render("c1", MEMORY.model_copy(update={"market": "spot"}), WHEEL, PINS)
    unit = spot.split(f"cat >/etc/systemd/system/{NOTICE_AGENT_UNIT} <<'UNIT'\n", 1)[1].split("\nUNIT\n", 1)[0]
    start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    assert start.startswith("ExecStart=/opt/memorybridge/bin/python -m provisioning.notice_agent --notice-file ")
    assert "Restart=always" in unit and f"systemctl enable --now {NOTICE_AGENT_UNIT}" in spot
    assert spot.index("pip install --no-deps --no-index") < spot.index(NOTICE_AGENT_UNIT)  # the agent is in the wheel
    assert NOTICE_AGENT_UNIT not in render("c1", MEMORY, WHEEL, PINS)


AWS_JUMBO_MTU = 9001


@pytest.mark.parametrize("tsq_bytes", [256 << 10, 4 << 20], ids=["raised", "kept"])
def test_ena_express_settings_leave_the_interface_as_ena_express_needs_it(root_support, tsq_bytes):  # noqa: F811  (the imported fixture)
    """On a real kernel: the default route's interface (an ifb here, as it has byte queue limits like
    ENA's) drops to MTU 8900 from AWS's 9001, its byte queue limits are off, and TCP Small Queues allow
    at least 1 MiB, raised where less and kept where more. Everything in a namespace of the test's own."""
    ns = f"mb-ena-{os.getpid()}"
    inside = ["ip", "netns", "exec", ns]
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        made = subprocess.run(
            [*inside, "ip", "link", "add", "eth0", "numtxqueues", "2", "type", "ifb"], text=True, capture_output=True
        )
        if made.returncode:
            pytest.skip(f"this kernel cannot make an ifb device: {made.stderr.strip()}")
        for command in (
            f"ip link set eth0 mtu {AWS_JUMBO_MTU} up",
            "ip addr add 10.99.0.2/24 dev eth0",
            "ip route add default via 10.99.0.1",
            f"sysctl -qw net.ipv4.tcp_limit_output_bytes={tsq_bytes}",
        ):
            subprocess.run([*inside, *command.split()], check=True)
        script = 'set -euo pipefail\nfail() { echo "$1"; exit 1; }\n' + ena_express_settings()
        subprocess.run([*inside, "bash", "-c", script], check=True, capture_output=True)

        def read(path: str) -> str:
            return subprocess.run([*inside, "cat", path], check=True, capture_output=True, text=True).stdout.strip()

        assert int(read("/sys/class/net/eth0/mtu")) == ENA_EXPRESS_MTU
        limits = [read(f"/sys/class/net/eth0/queues/tx-{q}/byte_queue_limits/limit_min") for q in (0, 1)]
        assert all(int(limit) >= 1 << 30 for limit in limits), limits  # "max": the queue never limits bytes
        tsq = int(read("/proc/sys/net/ipv4/tcp_limit_output_bytes"))
        assert tsq == max(tsq_bytes, ENA_EXPRESS_TCP_LIMIT_OUTPUT_BYTES)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
