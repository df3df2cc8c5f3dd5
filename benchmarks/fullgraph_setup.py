"""What the full-graph benchmarks share: their graphs, RETEXO's model width, and MPI jobs on a
testbed.

- The RETEXO runs' synthetic graph (``retexo_time.py``, ``retexo_aggregate_cache.py``,
  ``pinch_exchange.py``) and their model width; the real graphs SliceGCN trains on
  (``slicegcn_accuracy.py``, ``slicegcn_time.py``), each converted once.
- The testbed: its CLI, how long a job may take, a testbed for the length of a block, the cores
  each emulated worker gets, and the least time a run's transfers need at the link's rate.

Imported as ``fullgraph_setup`` (the scripts run as ``python benchmarks/NAME.py``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

from fullgraph.retexo.training import TrainResult
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

RETEXO_GRAPH = SynthSpec(nodes=65_536, edges=600_000, dim=64, classes=8, seed=0, train=0.2, val=0.1, test=0.7)
RETEXO_HIDDEN = 256
TOLOKERS_SPLITS = 10
TESTBED = [sys.executable, "-m", "testbed.cli"]
JOB_TIMEOUT_S = 3600
# The testbed's hosts share this machine's cores: the workers do the work (the master only averages
# gradients), so each gets the machine's cores over the workers.
CORES = os.cpu_count() or 1


def retexo_graph(data_dir: Path, nodes: int = RETEXO_GRAPH.nodes) -> GraphDataset:
    """The RETEXO benchmarks' R-MAT graph (smaller ones, for quick checks, keep its average degree)."""
    spec = RETEXO_GRAPH.model_copy(update={"nodes": nodes, "edges": RETEXO_GRAPH.edges * nodes // RETEXO_GRAPH.nodes})
    path = data_dir / "retexo" / f"rmat-{nodes // 1024}k"
    if not (path / "meta.json").exists():
        synth(spec, path, overwrite=True, progress=False)
    return GraphDataset.open(path)


def dataset_path(name: str, run: int, shared: Path, data_dir: Path) -> Path:
    """The converted dataset for run ``run`` (Tolokers: its split ``run``), made once."""
    from remotegnn.convert import from_npz, from_planetoid

    if name == "tolokers":
        path = data_dir / f"tolokers-split{run % TOLOKERS_SPLITS}"
        if not (path / "meta.json").exists():
            from_npz(shared / "tolokers" / "tolokers.npz", path, split_index=run % TOLOKERS_SPLITS)
        return path
    path = data_dir / name
    if not (path / "meta.json").exists():
        from_planetoid(shared / "planetoid", path, name=name)
    return path


@contextlib.contextmanager
def testbed(hosts: int, gbit: float) -> Iterator[str]:
    """A testbed of ``hosts`` memory hosts and the learner host, taken down however the block ends."""
    name = f"mbsg-{uuid.uuid4().hex[:6]}"
    up = [*TESTBED, "up", "--name", name, "--memory-hosts", str(hosts), "--link-gbit", str(gbit)]
    try:
        subprocess.run(up, check=True, capture_output=True, text=True)
        yield name
    finally:
        subprocess.run([*TESTBED, "down", "--name", name], capture_output=True, text=True)


def bandwidth_floor(result: TrainResult, gbit: float) -> float:
    """The busiest host's bytes in its busier direction over the link rate (full duplex links).

    Reads only the traffic reports, which SliceGCN's results have in the same shape."""
    busiest = max(max(sum(e.sent for e in t.entries), sum(e.received for e in t.entries)) for t in result.traffic)
    return busiest * 8 / (gbit * 1e9)
