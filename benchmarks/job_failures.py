#!/usr/bin/env python
"""How a `remotegnn launch` job ends when one of its ranks fails: each case --runs times.

    python benchmarks/job_failures.py --runs 10 --output job_failures.json

Cases (one memory rank, one learner, a generated graph):
- example-bad-dataset: examples/train_graphsage.py --dataset nope (timed from the start);
- fail-at-start: the learner initialises MPI, then exits with an error before its first loader
  (the example with a dataset that does not exist fails the same way);
- raise-mid-epoch: the learner raises after two batches;
- leave-mid-epoch: the learner exits 0 after two batches, its loader not closed;
- kill-memory / kill-learner: SIGKILL of the memory rank / the learner mid-epoch.
Per case: the exit codes seen, the runs that did not end within JOB_LIMIT_S (then killed), the
runs that crashed with a signal of their own (a segfault or an abort: exit 134 or 139, or Open
MPI's "Process received signal"), and the seconds from the failure to mpiexec's exit (the learner
prints when it fails; a kill is timed from the kill).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

from foundation.fileio import atomic_write_text

LEARNER = """
import os, sys, time
from remotegnn.loader import DistributedGraphLoader
from remotegnn.mpi.world import world

case = sys.argv[1]
world()
if case == "fail-at-start":
    print(f"FAILING {time.monotonic()}", flush=True)
    sys.exit("failed before the first loader")
loader = DistributedGraphLoader(None, [10, 5], batch_size=64, shuffle=True, input_nodes="train")
for epoch in range(1000):
    for index, _ in enumerate(loader):
        if index == 2 and epoch == 0:
            if case == "raise-mid-epoch":
                print(f"FAILING {time.monotonic()}", flush=True)
                raise RuntimeError("failed mid-epoch")
            if case == "leave-mid-epoch":
                print(f"FAILING {time.monotonic()}", flush=True)
                sys.exit(0)
            print(f"READY {os.getpid()}", flush=True)
"""
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_graphsage.py"
CASES = ("example-bad-dataset", "fail-at-start", "raise-mid-epoch", "leave-mid-epoch", "kill-memory", "kill-learner")
CRASH_CODES = (134, 139)  # SIGABRT, SIGSEGV as a shell reports them
JOB_LIMIT_S = 300


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--output", type=Path)
    return parser.parse_args(argv)


def memory_rank(learner_pid: int) -> int:
    """The memory rank of the learner's job: mpiexec started both, so they share a parent."""
    parent = Path(f"/proc/{learner_pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat[1] == parent and b"remotegnn.cli.main" in argv and b"serve" in argv:
            return int(pid)
    raise RuntimeError(f"no memory rank beside learner {learner_pid}")


def one_run(case: str, program: Path, dataset: Path, scratch: Path) -> dict:
    learner = [str(EXAMPLE), "--dataset", "nope"] if case == "example-bad-dataset" else [str(program), case]
    started = time.monotonic()
    with (scratch / "stderr").open("w+") as stderr:  # a file, not a pipe: a chatty job never blocks on it
        job = subprocess.Popen(
            [sys.executable, "-m", "remotegnn.cli.main", "launch", "--memory", "1", "--dataset", str(dataset), "--"]
            + [sys.executable, *learner],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        failed_at = started if case == "example-bad-dataset" else None
        assert job.stdout is not None
        for line in job.stdout:
            word, _, value = line.partition(" ")
            if word == "FAILING":
                failed_at = float(value)
                break
            if word == "READY" and case.startswith("kill"):
                pid = int(value)
                victim = memory_rank(pid) if case == "kill-memory" else pid
                failed_at = time.monotonic()
                os.kill(victim, signal.SIGKILL)
                break
        timed_out = False
        try:
            code = job.wait(JOB_LIMIT_S)
        except subprocess.TimeoutExpired:
            timed_out = True
            job.kill()
            code = job.wait()
        ended = time.monotonic()
        stderr.seek(0)
        crashed = code in CRASH_CODES or "Process received signal" in stderr.read()
    return {
        "exit_code": code,
        "timed_out": timed_out,
        "crashed": crashed,
        "seconds_from_failure": round(ended - failed_at, 2) if failed_at is not None else None,
    }


def summary(runs: list[dict]) -> dict:
    seconds = [r["seconds_from_failure"] for r in runs if r["seconds_from_failure"] is not None]
    return {
        "runs": len(runs),
        "exit_codes": sorted({r["exit_code"] for r in runs}),
        "timed_out": sum(r["timed_out"] for r in runs),
        "crashed": sum(r["crashed"] for r in runs),
        "seconds_from_failure": {
            "median": statistics.median(seconds) if seconds else None,
            "max": max(seconds) if seconds else None,
        },
    }


def main(argv=None) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        program, dataset = Path(scratch) / "learner.py", Path(scratch) / "g"
        program.write_text(LEARNER)
        subprocess.run(
            [sys.executable, "-m", "remotegnn.cli.main", "synth", str(dataset), "--nodes", "20000"],
            check=True,
            capture_output=True,
        )
        cases = {}
        for case in args.cases.split(","):
            cases[case] = summary([one_run(case, program, dataset, Path(scratch)) for _ in range(args.runs)])
            print(json.dumps({case: cases[case]}), file=sys.stderr, flush=True)
    result = {"benchmark": "job_failures", "machine": common.machine(), "cases": cases}
    text = json.dumps(result, indent=1)
    print(text)
    if args.output:
        atomic_write_text(args.output, text + "\n")


if __name__ == "__main__":
    main()
