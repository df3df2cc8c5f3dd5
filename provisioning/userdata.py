"""The boot script (cloud-init runs user data that starts with ``#!`` as a shell script).

On every machine it installs Python 3.12 and the third-party packages MemoryBridge needs, pinned
(``provisioning.wheel.pins``), into ``/opt/memorybridge``; then it waits for the MemoryBridge wheel,
which `provision run` copies into ``WHEEL_DIR`` over SSH, and installs it only if its sha256 is the
one written here (a mismatch fails the boot, and the status says so). On a
data machine (each memory machine, or the learner of a single-machine plan) it waits for the gp3
data volume, formats it once (XFS, label ``mbdata``) and mounts it at ``/data`` via fstab (so it
comes back after a reboot), and prepares ``/data/datasets`` for the memory server. It writes
``/etc/memorybridge/node.json`` (cluster, node, role) and logs to ``/var/log/memorybridge-init.log``.
On a machine of a plan that runs ENA Express (`provision up` enabled it on the network interface)
it also sets what ENA Express needs of Linux to carry TCP over SRD at all. On a spot machine it
starts the notice agent (``provisioning.notice_agent``, a systemd service), which writes AWS's
two-minute interruption warning to ``NOTICE_FILE`` for `provision run`.
Its progress is one line in ``BOOT_STATUS`` (running, waiting-for-wheel, then ok, or failed with the
reason where the script knows it), which ``provision run`` reads over SSH before it stages data on a
machine.
It holds no secret: user data is readable by anyone allowed to describe the instance.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from contracts.cluster import ShippedWheel
from contracts.interruption import NOTICE_FILE
from provisioning.models import NodeSpec

DATA_LABEL = "mbdata"
MOUNT_POINT = "/data"
VENV = "/opt/memorybridge"
INIT_LOG = "/var/log/memorybridge-init.log"
# What `provision run` polls over SSH: "running" while the script runs, then "ok" or "failed".
BOOT_STATUS = "/var/lib/memorybridge/boot-status"
BOOT_OK, BOOT_FAILED, BOOT_WAITING_FOR_WHEEL = "ok", "failed", "waiting-for-wheel"
WHEEL_DIR = "/var/lib/memorybridge/wheel"  # where `provision run` puts the wheel (owned by the login user)
ETC_DIR = "/etc/memorybridge"
WHEEL_POLL_S = 5
# What ENA Express needs of Linux, per AWS's ENA Express settings for Linux (and the ENA driver's
# own check-ena-express-settings.sh): packets of at most 8900 bytes (the VPC's jumbo 9001 are sent
# without SRD), TCP Small Queues allowing at least 1 MiB in flight per flow, and byte queue limits off.
ENA_EXPRESS_MTU = 8900
ENA_EXPRESS_TCP_LIMIT_OUTPUT_BYTES = 1 << 20


@dataclass(frozen=True)
class BootPaths:
    """Where the boot script puts things: the defaults on a cluster; elsewhere in a test's stand-in."""

    venv: str = VENV
    init_log: str = INIT_LOG
    boot_status: str = BOOT_STATUS
    wheel_dir: str = WHEEL_DIR
    etc_dir: str = ETC_DIR
    profile: str = "/etc/profile.d/memorybridge.sh"  # puts the venv on every login's PATH


_HEADER = """#!/bin/bash
# memorybridge {role} machine {node} of cluster {cluster}; written by `provision up`.
set -euo pipefail
exec >>{init_log} 2>&1
mkdir -p "$(dirname {boot_status})"
echo running >{boot_status}
fail() {{ echo "{boot_failed}: $1" >{boot_status}; echo "$1"; exit 1; }}
trap 'code=$?; [ $code -eq 0 ] || grep -q "^{boot_failed}" {boot_status} || echo {boot_failed} >{boot_status}' EXIT
echo "memorybridge init start: $(date -Is)"

mkdir -p {etc_dir}
cat >{etc_dir}/node.json <<'NODE_JSON'
{node_json}
NODE_JSON

dnf install -y python3.12 python3.12-pip rsync
python3.12 -m venv {venv}
{venv}/bin/pip install --upgrade pip
{venv}/bin/pip install {pins}
echo 'export PATH={venv}/bin:$PATH' >{profile}
"""

# The interface is the default route's. (Braces are doubled for str.format.)
_ENA_EXPRESS = """
iface=$(ip -o route show default | awk '{{print $5; exit}}')
[ -n "$iface" ] || fail "ENA Express: no default route to find the network interface by"
ip link set dev "$iface" mtu {mtu}
if [ "$(sysctl -n net.ipv4.tcp_limit_output_bytes)" -lt {limit} ]; then
  sysctl -w net.ipv4.tcp_limit_output_bytes={limit}
fi
for queue in /sys/class/net/"$iface"/queues/tx-*/byte_queue_limits; do
  if [ -d "$queue" ]; then echo max >"$queue/limit_min"; fi
done
echo "ENA Express: $iface at MTU {mtu}, byte queue limits off"
"""


def ena_express_settings() -> str:
    """The boot script's lines that let ENA Express carry this machine's TCP flows (run as root)."""
    return _ENA_EXPRESS.format(mtu=ENA_EXPRESS_MTU, limit=ENA_EXPRESS_TCP_LIMIT_OUTPUT_BYTES)


# The MemoryBridge wheel arrives over SSH (`provision run`); nothing of that name comes from an
# index. Its sha256 is checked before pip sees it. (Braces are doubled for str.format.)
_WHEEL = """
mkdir -p {wheel_dir}
chown {login}:{login} {wheel_dir} 2>/dev/null || true
echo {waiting} >{boot_status}
echo "waiting for {file} in {wheel_dir} (provision run copies it)"
until [ -f {wheel_dir}/{file} ]; do sleep {poll_s}; done
actual=$(sha256sum {wheel_dir}/{file} | cut -d' ' -f1)
[ "$actual" = {sha256} ] || fail "wheel sha256 mismatch: {file} is $actual, the cluster expects {sha256}"
{venv}/bin/pip install --no-deps --no-index {wheel_dir}/{file}
echo {version} >{etc_dir}/version
"""

# The data volume is the EBS disk that is not the root disk (instance-store NVMe disks have another
# model name). It is attached after boot, so wait for it. (Braces are doubled for str.format.)
_VOLUME = """
root_disk=/dev/$(lsblk -no PKNAME "$(findmnt -no SOURCE /)")
data_disk=""
for _ in $(seq 1 120); do
  while read -r name model; do
    if [ "$name" != "$root_disk" ] && {{ [[ "$model" == *"Elastic Block Store"* ]] || [ "$name" = /dev/xvdf ]; }}; then
      data_disk=$name
    fi
  done < <(lsblk -dpno NAME,MODEL)
  [ -n "$data_disk" ] && break
  sleep 5
done
[ -n "$data_disk" ] || {{ echo "no data volume attached after 10 minutes"; exit 1; }}
blkid "$data_disk" >/dev/null || mkfs.xfs -L {label} "$data_disk"
mkdir -p {mount}
grep -q 'LABEL={label}' /etc/fstab || echo 'LABEL={label} {mount} xfs defaults,nofail,noatime 0 2' >>/etc/fstab
mount -a
mkdir -p {mount}/datasets
chown -R {login}:{login} {mount}
"""

# After the wheel: the agent is part of it. (Braces are doubled for str.format.)
_NOTICE_AGENT = """
cat >/etc/systemd/system/{unit} <<'UNIT'
[Unit]
Description=MemoryBridge: AWS's spot interruption notice, written for provision run
After=network-online.target
[Service]
ExecStart={venv}/bin/python -m provisioning.notice_agent --notice-file {notice_file}
Restart=always
RestartSec=5
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now {unit}
"""
NOTICE_AGENT_UNIT = "memorybridge-notice.service"

_FOOTER = """
echo "memorybridge init done: $(date -Is)"
echo {boot_ok} >{boot_status}
"""


def render(
    cluster: str,
    node: NodeSpec,
    wheel: ShippedWheel,
    pins: list[str],
    login: str = "ec2-user",
    paths: BootPaths = BootPaths(),
) -> str:
    """The user-data script for ``node``: ``pins`` are the third-party requirements it installs from
    the index (shell-quoted), ``wheel`` the MemoryBridge wheel it then waits for and checks."""
    node_json = json.dumps(
        {"cluster": cluster, "node": node.node, "role": node.role, "data_dir": MOUNT_POINT if node.volume else None}
    )
    common = dict(
        venv=paths.venv,
        boot_status=shlex.quote(paths.boot_status),
        etc_dir=shlex.quote(paths.etc_dir),
    )
    script = _HEADER.format(
        role=node.role,
        node=node.node,
        cluster=cluster,
        node_json=node_json,
        pins=" ".join(shlex.quote(p) for p in pins),
        init_log=shlex.quote(paths.init_log),
        profile=shlex.quote(paths.profile),
        boot_failed=BOOT_FAILED,
        **common,
    )
    if node.ena_express:
        script += ena_express_settings()
    if node.volume:
        script += _VOLUME.format(label=DATA_LABEL, mount=MOUNT_POINT, login=shlex.quote(login))
    script += _WHEEL.format(
        wheel_dir=shlex.quote(paths.wheel_dir),
        login=shlex.quote(login),
        waiting=BOOT_WAITING_FOR_WHEEL,
        file=shlex.quote(wheel.file),
        sha256=wheel.sha256,
        version=shlex.quote(wheel.version),
        poll_s=WHEEL_POLL_S,
        **common,
    )
    if node.market == "spot":
        script += _NOTICE_AGENT.format(unit=NOTICE_AGENT_UNIT, venv=paths.venv, notice_file=shlex.quote(NOTICE_FILE))
    return script + _FOOTER.format(boot_ok=BOOT_OK, boot_status=common["boot_status"])
