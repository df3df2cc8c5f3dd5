"""`remotegnn reorder` of a graph in a memory cgroup that holds the interpreter and a quarter of
the graph: it finishes, and its files are the in-RAM rewrite's.

The group's limit is what the same child charges reordering a tiny graph (the interpreter,
numpy, numba's compiled kernels) plus a quarter of the graph's bytes, with the input dropped
from the page cache so the child reads it into its own group. The in-RAM rewrite, holding the
order's arrays whole and scipy's copy of the structure, is killed there (checked by hand when
this was written: the former `degree` rewrite was OOM-killed, its `rcm` still thrashing after
100 s). Needs root and a cgroup v1 memory hierarchy; skipped with the reason elsewhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth
from tests.remotegnn.store.test_reorder import assert_same_files, reorder_in_ram

pytestmark = [pytest.mark.root, pytest.mark.slow]

MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
BUDGET = 1 << 20  # the reorder's blocks: small beside the quarter of the graph the group leaves
ORDER = "rcm"  # the order that does the most: a sort of seeds, a search over the structure, a reversal
CHILD = (
    "import sys; open(sys.argv[1] + '/cgroup.procs', 'w').write(str(__import__('os').getpid()));"
    "from remotegnn.store import GraphDataset; from remotegnn.store.reorder import reorder;"
    "reorder(GraphDataset.open(sys.argv[2]), sys.argv[3], sys.argv[4], progress=False, memory=int(sys.argv[5]))"
)


@pytest.fixture
def memory_group() -> Iterator[Path]:
    if os.geteuid() != 0 or not (MEMORY_ROOT / "memory.limit_in_bytes").exists():
        pytest.skip("needs root and a cgroup v1 memory hierarchy")
    group = MEMORY_ROOT / f"mbtest-reorder-{os.getpid()}"
    group.mkdir()
    try:
        yield group
    finally:
        group.rmdir()  # its one process has exited


def reorder_in(group: Path, src: Path, dst: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-c", CHILD, str(group), str(src), str(dst), ORDER, str(BUDGET)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


def charged_peak(group: Path, src: Path, dst: Path) -> int:
    """The most the group held while a child reordered ``src`` (a child before it warms numba's cache)."""
    (group / "memory.max_usage_in_bytes").write_text("0")
    done = reorder_in(group, src, dst)
    assert done.returncode == 0, done.stderr
    return int((group / "memory.max_usage_in_bytes").read_text())


def drop_from_page_cache(folder: Path) -> None:
    """Written out and dropped, so the child reads the graph into its own group's page cache."""
    for path in folder.rglob("*.npy"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def test_a_graph_four_times_the_memory_left_reorders_to_the_in_ram_files(rmat, memory_group, tmp_path):
    graph = tmp_path / "graph"
    synth(SynthSpec(nodes=400_000, edges=1_000_000, dim=8, classes=4, seed=3), graph, progress=False)
    graph_bytes = sum(p.stat().st_size for p in graph.rglob("*") if p.is_file())
    charged_peak(memory_group, rmat.path, tmp_path / "warm")
    baseline = charged_peak(memory_group, rmat.path, tmp_path / "tiny")
    (memory_group / "memory.limit_in_bytes").write_text(str(baseline + graph_bytes // 4))
    drop_from_page_cache(graph)
    done = reorder_in(memory_group, graph, tmp_path / "bounded")
    assert done.returncode == 0, f"exit {done.returncode} (-9: killed for memory) {done.stderr[-2000:]}"
    assert int((memory_group / "memory.failcnt").read_text()) > 0  # it met the limit and had pages reclaimed
    reorder_in_ram(GraphDataset.open(graph), tmp_path / "in-ram", ORDER)
    assert_same_files(tmp_path / "in-ram", tmp_path / "bounded")
