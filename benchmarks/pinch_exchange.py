#!/usr/bin/env python
"""Distributed training's exchanges over MPI, user-space UDP and PINCH, on the testbed's links.

Each run is one MPI job (``testbed mpiexec``) of ``python -m fullgraph.retexo.mpi``: worker
i on memory host m<i>, the master on l0, every link limited by tbf. The same training goes over
three exchanges (``--exchange``): ``mpi`` (Open MPI's TCP), ``udp`` (the reliable UDP layer, every
datagram read by the process) and ``pinch`` (fixed-point rows and the gradient sum added by each
receiver's XDP program, weights cloned by the master's TC program). Methods: standard training
(boundary rows forward and their gradients back every round) and RETEXO (rows once per layer).

Per run: wall seconds; the master's CPU seconds receiving the gradient sum and that per aggregated
record (a record is 16 values; a round brings workers x params / 16), with the XDP program's own
run time added for pinch (kernel statistics on); the workers' CPU seconds in the boundary exchanges
(sending and receiving); system calls per round of every rank (a raw tracepoint counting each
rank's process while it trains); datagrams, retransmissions and duplicates. Every run's losses are
compared with the mpi run's: udp must be bit-exact, pinch within its fixed-point bound.

Faults: the udp and pinch runs again with 1% of the datagrams dropped, then 1% duplicated, on every
host's egress (a TC program: this kernel has no netem). The results must equal the fault-free run's
bit for bit (udp: the same bytes; pinch: integer sums do not depend on order or retransmission).

Graph: the RETEXO time benchmark's synthetic R-MAT graph (65,536 nodes, 64 features), dealt at
random to the workers; GraphSAGE, 2 layers, hidden 256.

Needs root (namespaces, tc, BPF) and Open MPI; prints ``skipped`` with the reason otherwise.

Run: ``sudo .venv/bin/python benchmarks/pinch_exchange.py [--workers 2,4] [--rounds 10] [--link-gbit 1]
[--methods standard,retexo] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import tempfile
from pathlib import Path

import common
from fullgraph_setup import JOB_TIMEOUT_S, RETEXO_GRAPH, TESTBED, retexo_graph, testbed

from fullgraph.exchange.options import DEFAULT_PORT, ExchangeOptions
from fullgraph.exchange.pinch.faults import injecting
from fullgraph.exchange.pinch.fixedpoint import chunks, sum_error_bound
from fullgraph.exchange.pinch.kernel import BpfStats, bpf_available
from fullgraph.partitioner import write_partition
from fullgraph.retexo import mpi as retexo_mpi
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.mpi import RetexoSpec
from fullgraph.retexo.training import TrainResult

EXCHANGES = ("mpi", "udp", "pinch")
METHODS = ("standard", "retexo")
FAULT_PPM = 10_000  # 1%
FAULTS = {"loss": (FAULT_PPM, 0), "duplication": (0, FAULT_PPM)}  # kind: (drop ppm, duplicate ppm)
FAULT_RUNS = tuple(f"{ex}:{kind}" for kind in FAULTS for ex in ("udp", "pinch"))
THREADS = "1"  # OMP_NUM_THREADS: the testbed's hosts share this machine's cores
ROW_KINDS = ("features", "representations", "representation_gradients", "evaluation")
PORTS = (DEFAULT_PORT, DEFAULT_PORT + 64)


def skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root for the testbed's namespaces, tc and BPF (run with sudo)"
    reason = bpf_available()
    if reason is not None:
        return f"the kernel programs do not load: {reason}"
    return None


def run_job(name: str, partition: Path, workers: int, config: TrainConfig, exchange: ExchangeOptions) -> TrainResult:
    with tempfile.TemporaryDirectory(prefix="pinch-exchange-") as tmp:
        result = Path(tmp) / "result.json"
        program = retexo_mpi.program(RetexoSpec(partition=partition, config=config, exchange=exchange), result)
        ranks = ["-n", str(workers + 1), "-x", f"OMP_NUM_THREADS={THREADS}", *program]
        done = subprocess.run(
            [*TESTBED, "mpiexec", "--name", name, "--", *ranks],
            capture_output=True,
            text=True,
            timeout=JOB_TIMEOUT_S,
        )
        if done.returncode != 0 or not result.exists():
            raise RuntimeError(f"the job failed ({done.returncode}): {done.stderr[-3000:]}")
        return TrainResult.model_validate_json(result.read_text())


def losses(result: TrainResult) -> list[float]:
    return [r.loss for s in result.stages for r in s.rounds]


def summary(result: TrainResult) -> dict:
    workers = result.workers
    master = result.traffic[workers]
    rounds = sum(len(s.rounds) for s in result.stages)
    params = master.total(("model_gradients",)) // 4 // max(workers, 1) // rounds  # float32 values per gradient
    records = workers * chunks(params) * rounds
    kernel_s = (master.wire.kernel_ns / 1e9) if master.wire else 0.0
    user_s = master.cpu_seconds(("model_gradients",))
    out = {
        "seconds": round(result.seconds, 3),
        "message_passing_seconds": round(result.message_passing_seconds, 3),
        "aggregation_seconds": round(result.aggregation_seconds, 3),
        "test_acc": round(result.test_acc, 4),
        "gradient_sum": {
            "records": records,
            "master_cpu_s": round(user_s, 4),
            "xdp_s": round(kernel_s, 4),
            "cpu_ns_per_record": round((user_s + kernel_s) * 1e9 / records, 1),
        },
        "boundary_exchange_cpu_s_per_worker": round(
            sum(t.cpu_seconds(ROW_KINDS) for t in result.traffic[:workers]) / workers, 4
        ),
        "syscalls_per_round": {
            ("master" if t.rank == workers else f"worker {t.rank}"): round((t.syscalls or 0) / rounds)
            for t in result.traffic
        },
        "payload_bytes": result.measured.total,
    }
    if result.exchange != "mpi":
        wires = [t.wire for t in result.traffic if t.wire is not None]
        out["datagrams"] = {
            "sent": sum(w.datagrams_sent for w in wires),
            "read_by_processes": sum(w.datagrams_received for w in wires),
            "summed_in_kernel_records": sum(w.kernel_records for w in wires),
            "retransmitted": sum(w.retransmitted for w in wires),
            "duplicates_dropped_in_user_space": sum(w.duplicates for w in wires),
            "wire_bytes_sent": sum(w.wire_bytes_sent for w in wires),
        }
    return out


def compare(run: TrainResult, baseline: TrainResult) -> dict:
    a, b = losses(run), losses(baseline)
    return {
        "identical_losses": a == b,
        "max_loss_difference": max((abs(x - y) for x, y in zip(a, b)), default=0.0),
        "same_payload_bytes": run.measured == baseline.measured,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="2,4", help="worker counts")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--methods", default=",".join(METHODS), help="of " + ", ".join(METHODS))
    parser.add_argument("--link-gbit", type=float, default=1.0)
    parser.add_argument("--nodes", type=int, default=RETEXO_GRAPH.nodes, help="the R-MAT graph's nodes (quick checks)")
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--fault-runs", default=",".join(FAULT_RUNS), help="EXCHANGE:FAULT runs (quick checks: fewer)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if unknown := set(args.fault_runs.split(",")) - set(FAULT_RUNS):
        parser.error(f"--fault-runs: {', '.join(sorted(unknown))} not of {', '.join(FAULT_RUNS)}")
    report: dict = {"benchmark": "pinch_exchange", "date": dt.date.today().isoformat(), "machine": common.machine()}
    reason = skip_reason()
    if reason:
        report["skipped"] = reason
        return common.emit(report, args.output)
    dataset = retexo_graph(args.data_dir, args.nodes)
    report["setting"] = {
        "graph": f"R-MAT, {args.nodes:,} nodes, {dataset.meta.feature_dim} features, random parts",
        "model": "sage, 2 layers, hidden 256",
        "rounds": args.rounds,
        "link_gbit": args.link_gbit,
        "fault_ppm": FAULT_PPM,
        "threads_per_rank": THREADS,
    }
    report["fixed_point_bound_per_gradient_value"] = {n: sum_error_bound(n) for n in (2, 4)}
    report["runs"] = {}
    with BpfStats():
        for workers in (int(w) for w in args.workers.split(",")):
            partition = args.data_dir / "retexo" / f"rmat-{args.nodes // 1024}k-random{workers}"
            write_partition(dataset, partition, workers, "random", seed=0, overwrite=True)
            hosts = [f"m{i}" for i in range(workers)] + ["l0"]
            with testbed(workers, args.link_gbit) as name:
                for method in args.methods.split(","):
                    config = TrainConfig(method=method, model="sage", rounds=args.rounds, split="random")
                    results = {
                        ex: run_job(name, partition, workers, config, ExchangeOptions(exchange=ex, count_syscalls=True))
                        for ex in EXCHANGES
                    }
                    runs = {ex: summary(r) for ex, r in results.items()}
                    runs["udp"]["against_mpi"] = compare(results["udp"], results["mpi"])
                    runs["pinch"]["against_mpi"] = compare(results["pinch"], results["mpi"])
                    per_record = {ex: runs[ex]["gradient_sum"]["cpu_ns_per_record"] for ex in EXCHANGES}
                    runs["master_cpu_per_record_udp_over_pinch"] = round(per_record["udp"] / per_record["pinch"], 2)
                    runs["master_cpu_per_record_mpi_over_pinch"] = round(per_record["mpi"] / per_record["pinch"], 2)
                    if method == "standard":
                        runs["faults"] = fault_runs(name, partition, workers, config, hosts, results, args.fault_runs)
                    report["runs"][f"{workers} workers, {method}"] = runs
    return common.emit(report, args.output)


def fault_runs(
    name: str,
    partition: Path,
    workers: int,
    config: TrainConfig,
    hosts: list[str],
    clean: dict[str, TrainResult],
    which: str,
) -> dict:
    """The ``which`` runs (``EXCHANGE:FAULT,...``), each against ``clean``'s run of its exchange."""
    out = {}
    for ex, kind in (run.split(":") for run in which.split(",")):
        drop, dup = FAULTS[kind]
        label = f"1% {kind}"
        with injecting([f"{name}-{host}" for host in hosts], drop, dup, PORTS) as counters:
            result = run_job(name, partition, workers, config, ExchangeOptions(exchange=ex))
        row = summary(result)
        row["against_fault_free"] = compare(result, clean[ex])
        row["injected"] = {
            "dropped": sum(c.get("dropped", 0) for c in counters),
            "duplicated": sum(c.get("duplicated", 0) for c in counters),
        }
        out[f"{ex}, {label}"] = row
    return out


if __name__ == "__main__":
    raise SystemExit(main())
