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

With ``--quarter-group`` (root, a cgroup v1 memory hierarchy) each reorder runs again in a memory
group limited to a quarter of the graph's bytes, the graph's pages evicted first so the child
reads it into its own group; its time, exit code, how often it met the limit, and whether its
files equal the unlimited run's byte for byte are reported.

``python benchmarks/reorder_memory.py [--nodes 262144,1048576] [--degree 8] [--dim 64]
[--orders degree,dbg,bfs,rcm] [--memory-mib 32] [--quarter-group] [--output FILE]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import filecmp
import json
import os
import shutil
import sys
from pathlib import Path

import common

ROOT = Path(__file__).resolve().parents[1]
ORDERS = "degree,dbg,bfs,rcm"
MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
GROUP_SHARE = 4  # the group holds a quarter of the graph
JOIN_AND_REORDER = (  # the child joins the group before it imports anything, so all it holds is charged there
    "import os, runpy, sys; open(sys.argv[1] + '/cgroup.procs', 'w').write(str(os.getpid()));"
    "sys.argv = ['remotegnn', *sys.argv[2:]]; runpy.run_module('remotegnn.cli.main', run_name='__main__')"
)


def measure(nodes: int, args: argparse.Namespace, work: Path) -> dict:
    from remotegnn.synth import SynthSpec, synth

    graph = work / f"rmat{nodes}"
    synth(SynthSpec(nodes=nodes, edges=nodes * args.degree, dim=args.dim, classes=16, seed=0), graph, progress=False)
    row: dict = {"nodes": nodes, "graph_bytes": common.folder_bytes(graph), "orders": {}}
    for order in args.orders.split(","):
        out = work / f"{graph.name}-{order}"
        command = ["reorder", graph, out, "--order", order, "--memory-mib", args.memory_mib, "--json"]
        done = common.run_measured([sys.executable, "-m", "remotegnn.cli.main", *command], ROOT)
        result = json.loads(done["stdout"])
        row["edges"] = result["meta"]["num_edges"]
        row["orders"][order] = {
            "seconds": done["seconds"],
            "order_seconds": result["order_seconds"],
            "peak_rss_mib": done["peak_rss_mib"],
            "peak_anon_mib": done["peak_anon_mib"],
        }
        if args.quarter_group:
            bounded = work / f"{out.name}-bounded"
            command[2] = bounded
            row["orders"][order]["quarter_group"] = in_quarter_group(command, graph, row["graph_bytes"], out)
            shutil.rmtree(bounded, ignore_errors=True)
        shutil.rmtree(out)
    shutil.rmtree(graph)
    return row


def in_quarter_group(command: list, graph: Path, graph_bytes: int, reference: Path) -> dict:
    """``remotegnn`` with ``command`` (a reorder of ``graph`` whose output is ``command[2]``) in a
    memory group of a quarter of ``graph_bytes``: what it cost, and whether it wrote
    ``reference``'s files."""
    from testbed.volume import evict

    group = MEMORY_ROOT / f"mbbench-reorder-{os.getpid()}"
    group.mkdir()
    try:
        limit = graph_bytes // GROUP_SHARE
        (group / "memory.limit_in_bytes").write_text(str(limit))
        evict(graph)
        done = common.run_measured([sys.executable, "-c", JOIN_AND_REORDER, group, *command], ROOT, check=False)
        return {
            "limit_mib": round(limit / 2**20, 1),
            "seconds": done["seconds"],
            "exit": done["exit"],  # -9: killed for memory
            "times_at_limit": int((group / "memory.failcnt").read_text()),
            "same_files": done["exit"] == 0 and same_files(reference, Path(command[2])),
        }
    finally:
        group.rmdir()  # its one process has exited


def same_files(reference: Path, other: Path) -> bool:
    """Every array ``reference`` holds is byte for byte in ``other``, and both list the same files."""
    arrays = sorted(path.relative_to(reference) for path in reference.rglob("*.npy"))
    listed = [json.loads((folder / "meta.json").read_text())["files"] for folder in (reference, other)]
    return listed[0] == listed[1] and all(filecmp.cmp(reference / a, other / a, shallow=False) for a in arrays)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="262144,1048576", help="comma-separated node counts (default 2^18,2^20)")
    parser.add_argument("--degree", type=int, default=8, help="R-MAT edges drawn per node (default 8)")
    parser.add_argument("--dim", type=int, default=64, help="float32 features per node (default 64)")
    parser.add_argument("--orders", default=ORDERS, help=f"comma-separated orders (default {ORDERS})")
    parser.add_argument("--memory-mib", type=int, default=32, help="the reorder's --memory-mib (default 32)")
    parser.add_argument(
        "--quarter-group", action="store_true", help="also reorder in a memory cgroup of a quarter of the graph (root)"
    )
    parser.add_argument("--work-dir", type=Path, help="where the graphs are written (default: a temporary folder)")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.nodes.split(",")]
    if min(sizes) < 2 or args.degree < 1 or args.dim < 1 or args.memory_mib < 1:
        parser.error("--nodes: counts of at least 2; --degree, --dim and --memory-mib at least 1")
    if args.quarter_group and (os.geteuid() != 0 or not (MEMORY_ROOT / "memory.limit_in_bytes").exists()):
        parser.error(f"--quarter-group needs root and a cgroup v1 memory hierarchy at {MEMORY_ROOT}")
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
            "quarter_group": args.quarter_group,
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
