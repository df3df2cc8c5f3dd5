"""What the full-graph tests share: small partitioned graphs, and free UDP ports for the udp and pinch
exchanges of MPI jobs."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from fullgraph.partitioner import write_partition
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth


def free_port_range(n: int) -> int:
    """A port p with p..p+n-1 free for UDP right now (each rank binds port + rank)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("", 0))
            base = probe.getsockname()[1]
        if base + n > 65535 - 32:
            continue
        held = []
        try:
            for port in range(base, base + n):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                held.append(s)
                s.bind(("", port))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError(f"no {n} free UDP ports in a row")


@pytest.fixture(scope="session")
def small(tmp_path_factory) -> GraphDataset:
    """A 600-node R-MAT graph with 12-dim features, 3 classes and train/val/test splits."""
    path = tmp_path_factory.mktemp("retexo") / "small"
    synth(
        SynthSpec(nodes=600, edges=3_000, dim=12, classes=3, seed=3, train=0.3, val=0.2, test=0.5), path, progress=False
    )
    return GraphDataset.open(path)


@pytest.fixture(scope="session")
def partitions(small, tmp_path_factory) -> dict[str, Path]:
    """The small graph whole (1 part), in 3 random parts, and in 2 METIS parts."""
    root = tmp_path_factory.mktemp("parts")
    return {
        "whole": _write(small, root / "whole", 1, "random"),
        "random3": _write(small, root / "random3", 3, "random"),
        "metis2": _write(small, root / "metis2", 2, "metis"),
    }


def _write(ds: GraphDataset, path: Path, parts: int, method: str) -> Path:
    write_partition(ds, path, parts, method, seed=1)  # type: ignore[arg-type]  # a PartitionMethod
    return path
