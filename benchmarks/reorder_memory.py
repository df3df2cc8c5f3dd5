"""Peak memory of `remotegnn reorder` against the graph's size: it should not grow with the graph.

For each size, an R-MAT graph is made with `remotegnn synth` (``--degree`` edges drawn per node,
stored both ways, ``--dim`` float32 features), then `remotegnn reorder --memory-mib BUDGET` runs
on it in a child process for each order; each child's peak resident set (VmHWM, read until it
exits) and the most anonymous memory it held (the peak also counts the pages of the files it maps,
which the page cache lends and takes back) are taken.

The reorder holds about ``--memory-mib`` of blocks plus the interpreter whatever the graph's size:
its per-node arrays (the order, its inverse, the search's bitmap) are files, read in blocks or
through memory maps, so the anonymous peak should stay flat as the graph grows while the graph
(and the mapped pages the resident set counts) grows.

``python benchmarks/reorder_memory.py [--nodes 262144,1048576] [--degree 8] [--dim 64]
[--orders degree,dbg,bfs,rcm] [--memory-mib 32] [--output FILE]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
from pathlib import Path

import common

ROOT = Path(__file__).resolve().parents[1]
ORDERS = "degree,dbg,bfs,rcm"


def measure(nodes: int, args: argparse.Namespace, work: Path) -> dict:
    from remotegnn.synth import SynthSpec, synth

    graph = work / f"rmat{nodes}"
    synth(SynthSpec(nodes=nodes, edges=nodes * args.degree, dim=args.dim, classes=16, seed=0), graph, progress=False)
    row: dict = {"nodes": nodes, "graph_bytes": common.folder_bytes(graph), "orders": {}}
    for order in args.orders.split(","):
        out = work / f"{graph.name}-{order}"
        argv = [sys.executable, "-m", "remotegnn.cli.main", "reorder", graph, out, "--order", order]
        done = common.run_measured([*argv, "--memory-mib", args.memory_mib, "--json"], ROOT)
        result = json.loads(done["stdout"])
        row["edges"] = result["meta"]["num_edges"]
        row["orders"][order] = {
            "seconds": done["seconds"],
            "order_seconds": result["order_seconds"],
            "peak_rss_mib": done["peak_rss_mib"],
            "peak_anon_mib": done["peak_anon_mib"],
        }
        shutil.rmtree(out)
    shutil.rmtree(graph)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="262144,1048576", help="comma-separated node counts (default 2^18,2^20)")
    parser.add_argument("--degree", type=int, default=8, help="R-MAT edges drawn per node (default 8)")
    parser.add_argument("--dim", type=int, default=64, help="float32 features per node (default 64)")
    parser.add_argument("--orders", default=ORDERS, help=f"comma-separated orders (default {ORDERS})")
    parser.add_argument("--memory-mib", type=int, default=32, help="the reorder's --memory-mib (default 32)")
    parser.add_argument("--work-dir", type=Path, help="where the graphs are written (default: a temporary folder)")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.nodes.split(",")]
    if min(sizes) < 2 or args.degree < 1 or args.dim < 1 or args.memory_mib < 1:
        parser.error("--nodes: counts of at least 2; --degree, --dim and --memory-mib at least 1")
    with common.scratch("reorder-memory.", args.work_dir) as work:
        rows = [measure(n, args, work) for n in sizes]
    first, last = rows[0], rows[-1]
    report = {
        "benchmark": "reorder_memory",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "parameters": {
            "graph": f"R-MAT (remotegnn synth), {args.degree} edges drawn per node stored both ways, "
            f"{args.dim} x float32 features",
            "memory_mib": args.memory_mib,
        },
        "sizes": rows,
        "figures": {
            "graph_ratio": round(last["graph_bytes"] / first["graph_bytes"], 2),
            "peak_anon_ratio": {
                order: round(last["orders"][order]["peak_anon_mib"] / first["orders"][order]["peak_anon_mib"], 2)
                for order in first["orders"]
            },
            "peak_rss_ratio": {
                order: round(last["orders"][order]["peak_rss_mib"] / first["orders"][order]["peak_rss_mib"], 2)
                for order in first["orders"]
            },
        },
        "machine": common.machine(),
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
