#!/usr/bin/env python
"""How Open MPI spreads one large message over F TCP flows (what `remotegnn launch --flows F` sets).

For each F, two ranks on this machine talk over TCP only (``--mca btl tcp,self``) with
``btl_tcp_links F`` and ``pml_ob1_use_all_rdma 1`` (without it, ob1 pipelines over the first
link alone); the sender sends ``--mb`` MB twice, and the receiver reads, from `ss -ti`, the bytes
each of its connections to the sender received. AWS caps every flow, so a message takes as long
as its largest share: ``effective_flows`` = total / largest share is how many flows' worth of
bandwidth it gets (what the planner prices).

    .venv/bin/python benchmarks/flows.py [--flows 1,2,3,4,8] [--mb 256] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import common

ROOT = Path(__file__).resolve().parents[1]
PROBE = r"""
import json, os, re, subprocess, sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
buf = np.ones(int(sys.argv[1]) << 20, dtype=np.uint8)
for _ in range(2):
    if comm.rank == 0:
        comm.Send(buf, dest=1)
    else:
        comm.Recv(buf, source=0)
comm.Barrier()
if comm.rank == 1:
    lines = subprocess.run(["ss", "-tnpi"], capture_output=True, text=True).stdout.splitlines()
    mine = f"pid={os.getpid()},"
    got = []
    for here, after in zip(lines, lines[1:] + [""]):
        if mine in here and "127.0.0.1" not in here:  # not the connection to the local daemon
            found = re.search(r"bytes_received:(\d+)", after)
            got.append(int(found.group(1)) if found else 0)
    print(json.dumps(sorted(got, reverse=True)))
comm.Barrier()
"""


def measure(flows: int, mb: int) -> dict:
    from remotegnn.mpmd import find_mpiexec, own_session_directory

    argv = [find_mpiexec(None), "--oversubscribe", "-n", "2", "--mca", "btl", "tcp,self"]
    argv += ["--mca", "btl_tcp_links", str(flows), "--mca", "pml_ob1_use_all_rdma", "1"]
    argv += [sys.executable, "-c", PROBE, str(mb)]
    if os.geteuid() == 0:
        argv.insert(1, "--allow-run-as-root")
    with own_session_directory() as environment:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT, env=environment)
    if done.returncode != 0:
        raise SystemExit(f"mpiexec with {flows} flows failed: {done.stderr[-2000:]}")
    shares = json.loads(next(line for line in done.stdout.splitlines() if re.match(r"^\[", line)))
    total = sum(shares)
    return {
        "flows": flows,
        "connections": len(shares),
        "mb_per_connection": [round(s / 1e6, 1) for s in shares],
        "largest_share": round(shares[0] / total, 3),
        "effective_flows": round(total / shares[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", default="1,2,3,4,8", help="comma-separated flow counts")
    parser.add_argument("--mb", type=int, default=256, help="MB per message (sent twice)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    counts = [int(f) for f in args.flows.split(",") if f]
    if not counts or min(counts) < 1 or args.mb < 1:
        parser.error("--flows: counts of at least 1; --mb at least 1")
    report = {
        "benchmark": "flows",
        "rows": [measure(f, args.mb) for f in counts],
        "machine": common.machine(),
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
