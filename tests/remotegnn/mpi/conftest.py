"""Running `remotegnn launch` jobs for the MPI tests: real mpiexec, real ranks on this host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

LEARNER = Path(__file__).with_name("learner.py")
JOB_TIMEOUT_S = 180
SCENARIO_TIMEOUT_S = 60
"""More seconds a job may take for each scenario it runs beyond its first."""


def launch(*args: str, timeout: float = JOB_TIMEOUT_S, **kwargs) -> subprocess.CompletedProcess:
    """Run `remotegnn launch ARGS` to the end."""
    return subprocess.run(
        [sys.executable, "-m", "remotegnn.cli.main", "launch", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def run_job(
    learner_args: list[str],
    out: Path,
    *,
    memory: int,
    learners: int,
    launch_args: tuple[str, ...],
    timeout: float = JOB_TIMEOUT_S,
) -> str:
    """A `remotegnn launch` job of ``memory`` memory ranks and ``learners`` learner ranks, each
    running learner.py with ``learner_args``, to its successful end; what its ranks logged."""
    out.mkdir(parents=True, exist_ok=True)
    job = launch(
        "--memory",
        str(memory),
        "--learners",
        str(learners),
        *launch_args,
        "--",
        sys.executable,
        str(LEARNER),
        *learner_args,
        timeout=timeout,
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    return job.stderr


def run_learners(
    scenario: str,
    dataset: Path,
    out: Path,
    *,
    memory: int = 1,
    learners: int = 1,
    options: dict | None = None,
    launch_args: tuple[str, ...] = (),
) -> list[dict]:
    """A job whose learners run one scenario of learner.py (``options``: the MPI loader's extra
    options; ``launch_args``: more `remotegnn launch` options); their JSON results."""
    args = [scenario, str(out), str(dataset), *([json.dumps(options)] if options else [])]
    run_job(args, out, memory=memory, learners=learners, launch_args=launch_args)
    return [json.loads((out / f"learner{i}.json").read_text()) for i in range(learners)]


Scenario = tuple[str, Path, dict]
"""(learner.py's scenario, the dataset, the MPI loader's extra options)."""


@dataclass(frozen=True)
class Scenarios:
    """What one job that ran several scenarios left: name -> its learners' results, the shared
    memory segments that appeared during the job and are still there (none, if every rank cleaned
    up), and what its ranks logged."""

    results: dict[str, list[dict]]
    segments_left: set[str]
    log: str


def run_scenarios(
    scenarios: dict[str, Scenario], out: Path, *, memory: int, learners: int = 1, launch_args: tuple[str, ...] = ()
) -> Scenarios:
    """One job whose learners run ``scenarios`` one after another, each with loaders (and so
    sessions on the same memory ranks) of its own. Each job's start (mpiexec, and torch and PyG
    imported in every rank: several CPU seconds) is paid once, not once per scenario. A scenario
    that leaves its loader open (early) goes last."""
    out.mkdir(parents=True, exist_ok=True)
    plan = out / "plan.json"
    plan.write_text(json.dumps({name: [kind, str(path), options] for name, (kind, path, options) in scenarios.items()}))
    before = rgnn_segments()
    timeout = JOB_TIMEOUT_S + SCENARIO_TIMEOUT_S * (len(scenarios) - 1)
    shape = dict(memory=memory, learners=learners, launch_args=launch_args)
    log = run_job(["plan", str(out), str(plan)], out, **shape, timeout=timeout)
    results = {
        name: [json.loads((out / name / f"learner{i}.json").read_text()) for i in range(learners)] for name in scenarios
    }
    return Scenarios(results, rgnn_segments() - before, log)


def rgnn_segments() -> set[str]:
    return {name for name in os.listdir("/dev/shm") if name.startswith("rgnn_")}


@pytest.fixture(scope="session")
def hetero_dataset(tmp_path_factory) -> Path:
    """A small heterogeneous dataset (papers and authors) in our format."""
    from remotegnn.convert.pyg import from_pyg
    from tests.remotegnn.test_hetero import graph

    return from_pyg(graph(), tmp_path_factory.mktemp("hetero") / "hetero").path
