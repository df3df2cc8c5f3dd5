"""The job's boundary models: where things are on the machines, and the record a job leaves.

``MachineLayout`` is what ``provision run`` assumes of a machine. Its defaults are the paths the
boot script of ``provision up`` creates; a cluster built from other images (or test hosts on one
machine) passes its own with ``--layout FILE``. ``JobRecord`` is the runs JSON written to
``~/.memorybridge/clusters/NAME/runs/``, which ``planner calibrate --from`` and ``provision status``
read; ``JobProgress`` (in provisioning.models) is a job's epoch line, for ``provision status``.
"""

from __future__ import annotations

from pydantic import Field

from contracts.interruption import NOTICE_FILE
from foundation.models import StrictModel
from provisioning import userdata


class MachineLayout(StrictModel):
    """Paths on the cluster's machines (absolute), as the boot script lays them out."""

    bin_dir: str = Field(f"{userdata.VENV}/bin", description="where remotegnn, python and mpiexec are")
    boot_status: str = Field(
        userdata.BOOT_STATUS, description="one line: running, waiting-for-wheel, ok, or failed (with the reason)"
    )
    wheel_dir: str = Field(userdata.WHEEL_DIR, description="where the boot script waits for the MemoryBridge wheel")
    init_log: str = Field(userdata.INIT_LOG, description="the boot script's log (its tail is shown on failure)")
    datasets_dir: str = Field(f"{userdata.MOUNT_POINT}/datasets", description="datasets on the data volume")
    jobs_dir: str = Field("/home/ec2-user/memorybridge-jobs", description="a job's script directory and logs")
    notice_file: str = Field(NOTICE_FILE, description="where a spot machine's notice agent writes AWS's warning")
