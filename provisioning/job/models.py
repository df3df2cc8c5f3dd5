"""Where things are on a cluster's machines, as ``provision run`` assumes them.

``MachineLayout`` holds the absolute paths ``provision run`` uses on each machine: the boot script
of ``provision up`` lays out most of them (its virtual environment, boot status, boot log, wheel
directory, data volume, notice file), and a job's directory goes under the login user's home. A
cluster built from other images (or test hosts on one machine) gives its own as a JSON file of these
fields with ``provision run --layout FILE``.

The record a job leaves is ``contracts.runs.JobRecord``, written as ``STATE_DIR/NAME/runs/JOB.json``
(``STATE_DIR`` defaults to ``~/.memorybridge/clusters``), which ``planner calibrate --from`` reads;
while a job runs, its latest epoch line (``contracts.runs.JobProgress``) is kept in the same
directory as ``current.json``, which ``provision status`` reads.
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
