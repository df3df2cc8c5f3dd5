"""PINCH on the testbed: one rank per host (workers on m0 and m1, the master on l0), real MPI jobs
over tbf-limited links, the kernel programs attached to each host's eth0.

- the kernel does the summing (records counted by the XDP programs, few datagrams read by the
  processes) and the training is the same training run in threads, as MPI's is (pinch within
  fixed point's bound, udp to the bit);
- 1% loss or 1% duplication on every host's egress (the TC fault program) changes nothing: the
  results equal the fault-free runs' exactly (udp with loss, pinch with duplication here; the other
  two pairs are the PINCH benchmark's fault runs, in its test);
- a peer whose datagrams never leave its host ends the job with an error naming it, not a hang;
- after every job, however it ended, nothing of PINCH stays attached or loaded.

One testbed for the module, with its own name and subnet, so other testbeds (a benchmark's) are
never touched. The programs a job's processes hold are tracked by id while it runs (from their
/proc fdinfo), so the check that they are freed ignores other testbeds' jobs. The fault program
is attached and held by this process, outside the testbed (see ``faults``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contracts import testbed as tb  # its Test* models are no test classes
from fullgraph.exchange.options import DEFAULT_PORT, ExchangeOptions
from fullgraph.exchange.pinch.faults import injecting
from fullgraph.exchange.pinch.kernel import AGGREGATE_PROGRAM, BROADCAST_PROGRAM
from fullgraph.partitioner import write_partition
from fullgraph.retexo import mpi as retexo_mpi
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.mpi import RetexoSpec
from fullgraph.retexo.training import TrainResult, train_local
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth
from testbed import lifecycle
from testbed import state as st
from testbed.processes import Scope
from tests.testbed.conftest import (  # the testbed tests' skips, and by their names the markers
    mpi,  # noqa: F401  (a fixture, requested by name below)
    root_support,  # noqa: F401  (a fixture, requested by name below)
)

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.mpi]

WORKERS = 2
HOSTS = [*(f"m{i}" for i in range(WORKERS)), "l0"]  # rank i on m<i>, the master (rank WORKERS) on l0
TESTBED = [sys.executable, "-m", "testbed.cli"]
CONFIG = TrainConfig(method="standard", model="sage", hidden=16, rounds=3)  # standard: exchanges every round
PORTS = (DEFAULT_PORT, DEFAULT_PORT + 64)  # [lo, hi): every port a rank of the job listens on
FAULT_PPM = 10_000  # 1%
ALL_PPM = 1_000_000  # every datagram
DEAD_PEER_TIMEOUT_S = 3.0
DEAD_PEER_BOUND_S = 60.0  # the failed job ends within this, MPI's start and torch's import included
JOB_TIMEOUT_S = 300  # a job still running then has hung
FREED_WITHIN_S = 10.0  # the kernel frees a program an RCU grace period after its last reference goes
# The watch's period: the programs checked (each host's aggregator, the master's broadcaster) live
# the whole job, seconds. Each look scans /proc and every testbed process's descriptors, about
# 4 ms of this process's CPU, which at 0.02 s took a third again of a job's own CPU from the ranks.
POLL_S = 0.1
PINCH_PROGRAMS = frozenset({AGGREGATE_PROGRAM, BROADCAST_PROGRAM})
RUN_TIMEOUT = 30  # seconds an ip or bpftool command may take
USER_SPACE = "sums in user space"  # what a pinch rank says on stderr when its kernel programs do not load


# -- the testbed, the graph, the jobs ------------------------------------------------------------
@dataclass(frozen=True)
class Bed:
    state: tb.TestbedState
    state_dir: Path

    def namespace(self, host: str) -> str:
        return self.state.host(host).namespace


@pytest.fixture(scope="module")
def bed(root_support, mpi, bpf, tmp_path_factory) -> Iterator[Bed]:  # noqa: F811  (the imported fixtures)
    """2 memory hosts and l0 on 1 Gbit/s links, in a subnet of its own (10.240-254.0.0/24)."""
    if shutil.which("bpftool") is None:
        pytest.skip("needs bpftool, to see which BPF programs are still loaded")
    state_dir = tmp_path_factory.mktemp("pinch-testbed")
    subnet = f"10.{random.randint(240, 254)}.0.0/24"
    spec = tb.TestbedSpec(name=st.new_name("pinchtb"), memory_hosts=WORKERS, link_gbit=1.0, subnet=subnet)
    made = lifecycle.up(spec, state_dir)
    try:
        yield Bed(made, state_dir)
    finally:
        lifecycle.down(state_dir, made.name)


@pytest.fixture(scope="module")
def partition(tmp_path_factory) -> Path:
    """A 2,000-node R-MAT graph (32 features, 4 classes) in 2 random parts."""
    root = tmp_path_factory.mktemp("pinch-testbed-graph")
    spec = SynthSpec(nodes=2_000, edges=10_000, dim=32, classes=4, seed=5, train=0.3, val=0.2, test=0.5)
    synth(spec, root / "graph", progress=False)
    write_partition(GraphDataset.open(root / "graph"), root / "parts", WORKERS, "random", seed=1, progress=False)
    return root / "parts"


def bpftool(*args: str) -> Any:
    """``bpftool -j ARGS``'s JSON (global: program ids are the same in every namespace); None if it fails
    (a program asked for by id that is gone already)."""
    done = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


def held_programs(pid: int) -> set[int]:
    """Ids of the BPF programs process ``pid`` holds (through a program's or a link's descriptor)."""
    found = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") not in ("anon_inode:bpf-prog", "anon_inode:bpf_link"):
                    continue
                for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
                    if line.startswith("prog_id:"):
                        found.add(int(line.split()[1]))
    return found


class ProgramWatch:
    """While open, records every PINCH program that a process on the testbed holds: id -> name."""

    def __init__(self, bed: Bed):
        self.scope = Scope(bed.state.namespaces)
        self.programs: dict[int, str] = {}
        self._seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProgramWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            for pid in self.scope.pids():
                for prog in held_programs(pid) - self._seen:
                    self._seen.add(prog)
                    info = bpftool("prog", "show", "id", str(prog))
                    name = info.get("name") if isinstance(info, dict) else None
                    if name in PINCH_PROGRAMS:
                        self.programs[prog] = name


@dataclass
class Job:
    returncode: int
    stderr: str
    seconds: float
    result: TrainResult | None
    programs: dict[int, str]  # the PINCH programs its processes held, id -> name
    attached_after: list[str]  # hosts whose eth0 still had an XDP program FREED_WITHIN_S after it ended
    loaded_after: set[int]  # its programs still loaded FREED_WITHIN_S after it ended

    def losses(self) -> list[float]:
        assert self.result is not None, self.stderr[-3000:]
        return [r.loss for s in self.result.stages for r in s.rounds]

    def assert_left_nothing(self) -> None:
        assert not self.attached_after, f"XDP still attached on {self.attached_after}"
        loaded = {p: self.programs[p] for p in self.loaded_after}
        assert not loaded, f"programs still loaded {FREED_WITHIN_S:g} s after the job: {loaded}"


def xdp_hosts(bed: Bed) -> list[str]:
    """Hosts whose eth0 has an XDP program."""
    out = []
    for host in HOSTS:
        shown = subprocess.run(
            ["ip", "-j", "-n", bed.namespace(host), "link", "show", "eth0"],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=True,
        )
        if "xdp" in json.loads(shown.stdout)[0]:
            out.append(host)
    return out


def left_behind(bed: Bed, programs: set[int]) -> tuple[list[str], set[int]]:
    """(hosts with XDP on eth0, ``programs`` still loaded), polled until both are empty or
    FREED_WITHIN_S has passed."""
    deadline = time.monotonic() + FREED_WITHIN_S
    while True:
        attached = xdp_hosts(bed)
        loaded = {p["id"] for p in bpftool("prog", "show") or []} & programs
        if (not attached and not loaded) or time.monotonic() > deadline:
            return attached, loaded
        time.sleep(0.1)


def run_job(bed: Bed, partition: Path, exchange: ExchangeOptions, tmp: Path) -> Job:
    """One training job (``testbed mpiexec``): its exit, stderr, result, and what it left."""
    result = tmp / f"result-{uuid.uuid4().hex[:8]}.json"
    program = retexo_mpi.program(RetexoSpec(partition=partition, config=CONFIG, exchange=exchange), result)
    argv = [
        *TESTBED, "mpiexec", "--state-dir", str(bed.state_dir), "--name", bed.state.name, "--",
        "-n", str(WORKERS + 1), "-x", "OMP_NUM_THREADS=1", *program,
    ]  # fmt: skip
    with ProgramWatch(bed) as watch:
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
        seconds = time.monotonic() - started
    attached, loaded = left_behind(bed, set(watch.programs))
    return Job(
        returncode=done.returncode,
        stderr=done.stderr,
        seconds=seconds,
        result=TrainResult.model_validate_json(result.read_text()) if result.exists() else None,
        programs=watch.programs,
        attached_after=attached,
        loaded_after=loaded,
    )


def faults(bed: Bed, hosts: list[str], drop_ppm: int, dup_ppm: int):
    """The fault program on each host's egress, for the job's ports, while the block runs."""
    return injecting([bed.namespace(h) for h in hosts], drop_ppm, dup_ppm, PORTS)


def total(counters: list[dict[str, int]], counter: str) -> int:
    return sum(c[counter] for c in counters)


@pytest.fixture(scope="module")
def clean(bed, partition, tmp_path_factory) -> dict[str, Job]:
    """The fault-free run of each datagram exchange."""
    tmp = tmp_path_factory.mktemp("pinch-testbed-clean")
    return {ex: run_job(bed, partition, ExchangeOptions(exchange=ex), tmp) for ex in ("udp", "pinch")}


@pytest.fixture(scope="module")
def threads(partition) -> TrainResult:
    """The same training in threads of this process, which MPI's exchange matches (within 1e-6) and
    udp's to the bit (tests/fullgraph/retexo/test_mpi.py): the reference, without a third job here.
    Its torch runs on one thread (tests/conftest.py), as the jobs' ranks do (OMP_NUM_THREADS=1)."""
    return train_local(partition, CONFIG)


def ok(job: Job) -> TrainResult:
    assert job.returncode == 0 and job.result is not None, job.stderr[-3000:]
    return job.result


# -- the tests -------------------------------------------------------------------------------------
def test_pinch_sums_in_the_kernel_and_trains_as_mpi_does(clean, threads):
    udp, pinch = (ok(clean[ex]) for ex in ("udp", "pinch"))
    assert USER_SPACE not in clean["pinch"].stderr
    # an aggregation program for each host's eth0 (each rank also loads one briefly on lo, the
    # probe of bpf_available), the broadcast program on the master's
    names = list(clean["pinch"].programs.values())
    assert names.count(AGGREGATE_PROGRAM) >= len(HOSTS) and names.count(BROADCAST_PROGRAM) == 1, names
    assert pinch.exchange == "pinch" and len(pinch.traffic) == WORKERS + 1
    for report in pinch.traffic:  # the workers, then the master
        assert report.wire is not None and report.wire.kernel_records > 0, report
    # the XDP programs drop every FIXED datagram but the one that completes a take: the processes
    # read about a quarter of what was sent (udp's read every one)
    sent = sum(t.wire.datagrams_sent for t in pinch.traffic)
    read = sum(t.wire.datagrams_received for t in pinch.traffic)
    udp_read = sum(t.wire.datagrams_received for t in udp.traffic)
    assert read * 3 < sent and read * 3 < udp_read, f"the processes read {read} of {sent} datagrams (udp: {udp_read})"
    mpi_losses = [r.loss for s in threads.stages for r in s.rounds]
    assert clean["pinch"].losses() == pytest.approx(mpi_losses, rel=1e-5)
    assert clean["udp"].losses() == mpi_losses
    assert pinch.measured == threads.measured and udp.measured == threads.measured
    for job in clean.values():
        job.assert_left_nothing()


# The other two pairs (pinch with loss, udp with duplication) are the PINCH benchmark's fault runs,
# checked against its fault-free runs in tests/benchmarks/test_pinch.py: every pair runs once.
@pytest.mark.parametrize(
    ("exchange", "fault", "drop_ppm", "dup_ppm"),
    [("udp", "loss", FAULT_PPM, 0), ("pinch", "duplication", 0, FAULT_PPM)],
)
def test_loss_and_duplication_change_nothing(bed, partition, clean, tmp_path, exchange, fault, drop_ppm, dup_ppm):
    with faults(bed, HOSTS, drop_ppm, dup_ppm) as injected:
        job = run_job(bed, partition, ExchangeOptions(exchange=exchange), tmp_path)
    result = ok(job)
    if fault == "loss":
        assert total(injected, "dropped") > 0 and total(injected, "duplicated") == 0, injected
        assert sum(t.wire.retransmitted for t in result.traffic) > 0
    else:
        assert total(injected, "duplicated") > 0 and total(injected, "dropped") == 0, injected
    assert job.losses() == clean[exchange].losses()
    assert result.measured == ok(clean[exchange]).measured
    job.assert_left_nothing()


def test_a_silent_peer_fails_the_job_and_is_named(bed, partition, tmp_path):
    """Nothing m1 (rank 1) sends to the job's ports leaves its host: worker 0, which waits on its
    boundary rows, names it, and its error ends the job (the master, which still hears worker 0's
    ALIVEs, does not blame it)."""
    exchange = ExchangeOptions(exchange="pinch", peer_timeout_s=DEAD_PEER_TIMEOUT_S)
    with faults(bed, ["m1"], ALL_PPM, 0) as injected:
        job = run_job(bed, partition, exchange, tmp_path)
    assert job.returncode != 0 and job.result is None, job.stderr[-3000:]
    assert job.seconds < DEAD_PEER_BOUND_S
    assert "nothing from rank 1" in job.stderr, job.stderr[-3000:]
    assert 0 < total(injected, "dropped") == total(injected, "seen"), injected
    assert AGGREGATE_PROGRAM in job.programs.values()  # the ranks had attached before the job failed
    job.assert_left_nothing()
