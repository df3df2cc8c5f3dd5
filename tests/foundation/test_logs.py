"""foundation.logs: the project's diagnostics on stderr from INFO up, other libraries' from WARNING up."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import logging
from foundation import logs
logs.configure()
logs.configure()  # a second call adds no second handler
logging.getLogger("remotegnn.mpi.server").info("memory rank 0: epoch 1")
logging.getLogger("fullgraph.exchange.fabrics").warning("rank 2: pinch sums in user space")
logging.getLogger("botocore.credentials").info("Found credentials in environment variables.")
logging.getLogger("botocore.credentials").warning("credentials expire soon")
"""


def test_project_info_and_other_libraries_warnings_reach_stderr_once():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "remotegnn.mpi.server: memory rank 0: epoch 1",
        "fullgraph.exchange.fabrics: rank 2: pinch sums in user space",
        "botocore.credentials: credentials expire soon",
    ]
