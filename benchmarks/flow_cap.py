#!/usr/bin/env python
"""Real batches over F capped TCP flows: does `--flows F` buy what the planner prices?

AWS carries at most 10 Gbit/s on one TCP flow in a cluster placement group. The testbed emulates
that with ``--flow-gbit`` (an htb class per connection; this kernel has no fq ``maxrate``), here
scaled down to what this machine can push: each host's link is --link-gbit, each flow at most
--flow-gbit. For each F one testbed runs the calibration job (benchmarks/fidelity_job.py,
GraphSAGE over DistributedGraphLoader, every feature row in the memory rank's cache so the link
is the bottleneck) with `testbed run --flows F`, and the steady epoch's bytes sent over its
seconds give the rate the batches actually got. Beside it: what the planner prices for that link,
min(link, (F + 1) / 2 x flow cap) (Open MPI sends the first of F flows two shares of a message,
benchmarks/flows.py), and the pipeline model's epoch for the run (the shipped testbed
calibration, the flow cap, the job's flows).

    sudo .venv/bin/python benchmarks/flow_cap.py [--flows 1,2,4] [--link-gbit 2] [--flow-gbit 0.5]

Needs root, Open MPI and the testbed's kernel features; prints one JSON document (and --output).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import common

from contracts.calibration import load_coefficients
from planner.calibration.fit import machine_of
from planner.calibration.runs import load_runs
from planner.calibration.testbed import predict
from planner.costmodel.pipeline import effective_flows

ROOT = Path(__file__).resolve().parents[1]
STATE_DIR = Path("/run/memorybridge/flow-cap")  # its own testbeds only: down --all never meets another's
WORKDIR = Path("/tmp/memorybridge-flow-cap")
PREFIX = "mbfc"
FANOUTS, EPOCHS = "10,5", 2
UNTHROTTLED_MBPS = 2000  # every row is cached: the volume is never read during an epoch


def measure(flows: int, args, graph: Path, profile: Path, feature_bytes: int, runs_file: Path) -> None:
    """One testbed with capped flows, one job over ``flows`` of them; the testbed removed whatever happens."""
    from contracts.testbed import TestbedSpec
    from testbed import job, lifecycle
    from testbed.state import new_name

    spec = TestbedSpec(
        name=new_name(args.prefix),
        link_gbit=args.link_gbit,
        flow_gbit=args.flow_gbit,
        dataset=graph,
        volume_mbps=UNTHROTTLED_MBPS,
    )
    train = common.fidelity_job_argv(
        graph,
        profile,
        fanouts=FANOUTS,
        batch_size=common.CALIBRATION_BATCH_SIZE,
        hidden=common.CALIBRATION_HIDDEN,
        epochs=EPOCHS,
        cache_bytes=feature_bytes,  # every row in RAM: the link bounds the epoch
        learner_cache_bytes=0,
        flows=flows,
    )
    try:
        bed = lifecycle.up(spec, args.state_dir)
        with common.job_output_to_stderr():
            record = job.run_training(args.state_dir, bed, train, runs_file, flows=flows)
        if record.exit_code != 0:
            raise SystemExit(f"the job over {flows} flow(s) failed ({record.exit_code}): {record.output_note}")
    finally:
        lifecycle.down_all(args.state_dir, args.prefix)


def rows(runs_file: Path, args) -> list[dict]:
    co = load_coefficients(ROOT / "pricing_data" / "calibration-testbed.json")
    out = []
    for run in load_runs(runs_file):
        assert run.report is not None and run.links is not None
        steady = run.report.steady_epochs()
        seconds = statistics.fmean(e.seconds for e in steady)
        sent = statistics.fmean(e.stats.bytes_sent for e in steady)
        flows = run.report.workload.flows
        machine = machine_of(run.links, run.report)
        predicted = float(predict(machine, run.report.profile, run.report.workload, co)["pipeline"].epoch_s[0])
        out.append(
            {
                "flows": flows,
                "gbit_per_s": round(sent * 8 / seconds / 1e9, 3),
                "priced_link_gbit_per_s": round(min(args.link_gbit, effective_flows(flows) * args.flow_gbit), 3),
                "epoch_s": round(seconds, 2),
                "predicted_epoch_s": round(predicted, 2),
                "mb_sent": round(sent / 1e6, 1),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", default="1,2,4")
    parser.add_argument("--link-gbit", type=float, default=2.0)
    parser.add_argument("--flow-gbit", type=float, default=0.5)
    parser.add_argument("--workdir", type=Path, default=WORKDIR)
    parser.add_argument("--state-dir", type=Path, default=STATE_DIR)
    parser.add_argument("--prefix", default=PREFIX, help="start of the testbeds' names")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    reason = common.testbed_unsupported()
    if reason:
        print(json.dumps({"skipped": reason}))
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    graph, profile, feature_bytes = common.calibration_graph(args.workdir, [FANOUTS])
    runs_file = args.workdir / "runs.json"
    runs_file.unlink(missing_ok=True)
    for flows in (int(f) for f in args.flows.split(",")):
        measure(flows, args, graph, profile, feature_bytes, runs_file)
    result = {
        "parameters": {"link_gbit": args.link_gbit, "flow_gbit": args.flow_gbit, "fanouts": FANOUTS},
        "machine": common.machine(),
        "rows": rows(runs_file, args),
    }
    return common.emit(result, args.output)


if __name__ == "__main__":
    sys.exit(main())
