"""`remotegnn serve --listen`: every option it accepts reaches the store server, or is refused
with a one-line error naming it; none is accepted and then ignored."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from remotegnn.pyg import RemoteFeatureStore
from remotegnn.pyg.server_process import ServerProcess
from remotegnn.volume import VolumeLimits


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "remotegnn.cli.main", "serve", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("flag, value", [("--batch-creators", "2"), ("--vector-loaders", "1"), ("--stats-every", "5")])
def test_options_the_store_server_has_no_use_for_are_refused(small, flag, value):
    result = serve(str(small.path), "--listen", "127.0.0.1:0", flag, value)
    assert result.returncode == 2
    assert f"{flag} has no effect with --listen" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_volume_limit_paces_the_store_servers_feature_reads(rmat):
    """With no cache every row comes from the volume: 4,096 rows of 64 B (256 KiB of pages) at
    1 MB/s take it at least ~0.26 s, by the counters the server prints when it stops."""
    limits = VolumeLimits(mb_per_s=1.0)
    server = ServerProcess(rmat.path, volume_mbps=limits.mb_per_s)
    try:
        store = RemoteFeatureStore.connect(server.address)
        np.testing.assert_array_equal(store[None, "x", None].numpy(), rmat.features[:])
    finally:
        assert server.stop() == 0
    assert "paced to 1 MB/s and 3000 IOPS" in server.stderr
    stats = json.loads(re.search(r"feature volume stats (\{.*\})", server.stderr).group(1))
    assert stats["rows"] == rmat.meta.num_nodes and stats["bytes_read"] >= rmat.features.nbytes
    floor = limits.seconds_for(stats["bytes_read"], stats["requests"])
    assert floor > 0.25
    assert stats["seconds"] >= floor / 2  # blkio grants a slice up front, so a short read may beat the limit a little
