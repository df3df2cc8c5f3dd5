"""Peak memory of `remotegnn convert` and `remotegnn profile` on OGB's binary layout at two sizes
a factor apart: the two steps from the published files to a plan.

For each size, an ogbn-papers100M-shaped folder (raw/data.npz with edge_index, node_feat and
num_*_list; raw/node-label.npz with NaN for unlabelled nodes; split/time/*.csv.gz) is written
with an R-MAT structure, then `remotegnn convert` runs in a child process, and `remotegnn
profile` on its output in another; each one's peak resident set (its VmHWM, read until it
exits) and the most anonymous memory it held (the peak also counts mapped file pages, which
the page cache lends and takes back) are taken. With ``--ogb-loader`` the ogb
package's own reader (``read_binary_graph_raw``, what PyG's and DGL's OGB datasets call) runs on
the same folder in another child, for comparison: it holds the whole graph in RAM.

The converter's peak should not grow with the input: its structure build sorts a fixed budget
of records at a time (plus one bit per edge and 8 bytes per node of labels), and features are
copied a block at a time by file reads and writes. The profile holds a few arrays of 4 or 8
bytes per node (access counts, one cache ranking at a time), so its memory grows with the node
count only, not with edges or features.

``python benchmarks/convert_memory.py [--nodes 262144,1048576] [--degree 16] [--dim 128]
[--ogb-loader] [--output FILE]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import shutil
import sys
from pathlib import Path

import common
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OGB_READ = "import sys; from ogb.io.read_graph_raw import read_binary_graph_raw as r; g = r(sys.argv[1])[0]"


def write_layout(folder: Path, nodes: int, degree: int, dim: int, seed: int = 0) -> int:
    """An OGB binary-layout folder; returns its size in bytes."""
    from remotegnn.synth import SynthSpec, rmat_edges  # the draw `remotegnn synth` makes

    raw = folder / "raw"
    raw.mkdir(parents=True)
    src, dst = rmat_edges(SynthSpec(nodes=nodes, edges=nodes * degree, dim=1, classes=2, seed=seed))
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((nodes, dim), dtype=np.float32)
    np.savez(
        raw / "data.npz",
        edge_index=np.stack([src, dst]),
        node_feat=features,
        num_nodes_list=np.array([nodes]),
        num_edges_list=np.array([len(src)]),
    )
    del src, dst, features
    labels = rng.integers(0, 172, (nodes, 1)).astype(np.float32)
    labels[rng.random(nodes) < 0.9] = np.nan  # papers100M labels about 1.4% of its nodes
    np.savez_compressed(raw / "node-label.npz", node_label=labels)
    labelled = np.flatnonzero(~np.isnan(labels[:, 0]))
    for name, part in zip(
        ("train", "valid", "test"), np.array_split(labelled, [len(labelled) * 8 // 10, len(labelled) * 9 // 10])
    ):
        (folder / "split" / "time").mkdir(parents=True, exist_ok=True)
        with gzip.open(folder / "split" / "time" / f"{name}.csv.gz", "wt") as handle:
            handle.write("\n".join(map(str, part)) + "\n")
    return common.folder_bytes(folder)


def measure(nodes: int, args: argparse.Namespace, work: Path) -> dict:
    folder = work / f"ogbn_rmat{nodes}"
    input_bytes = write_layout(folder, nodes, args.degree, args.dim)
    out = work / f"converted{nodes}"
    convert = [sys.executable, "-m", "remotegnn.cli.main", "convert", str(folder), str(out), "--format", "ogb"]
    converted = common.run_measured(convert, ROOT)
    profile = [sys.executable, "-m", "remotegnn.cli.main", "profile", str(out), "-o", str(work / "profile.json")]
    profiled = common.run_measured(profile, ROOT)
    row = {
        "nodes": nodes,
        "edges": nodes * args.degree,
        "input_bytes": input_bytes,
        "output_bytes": common.folder_bytes(out),
        "convert_s": converted["seconds"],
        "convert_peak_rss_mib": converted["peak_rss_mib"],
        "convert_peak_anon_mib": converted["peak_anon_mib"],
        "profile_s": profiled["seconds"],
        "profile_peak_rss_mib": profiled["peak_rss_mib"],
        "profile_peak_anon_mib": profiled["peak_anon_mib"],
    }
    if args.ogb_loader:
        loaded = common.run_measured([sys.executable, "-c", OGB_READ, str(folder / "raw")], ROOT)
        row |= {"ogb_loader_s": loaded["seconds"], "ogb_loader_peak_rss_mib": loaded["peak_rss_mib"]}
    shutil.rmtree(folder)
    shutil.rmtree(out)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="262144,1048576", help="comma-separated node counts (default 2^18,2^20)")
    parser.add_argument("--degree", type=int, default=16, help="R-MAT edges drawn per node (default 16)")
    parser.add_argument("--dim", type=int, default=128, help="float32 features per node (default 128)")
    parser.add_argument("--ogb-loader", action="store_true", help="also measure the ogb package's reader")
    parser.add_argument("--work-dir", type=Path, help="where the inputs are written (default: a temporary folder)")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.nodes.split(",")]
    if len(sizes) < 1 or min(sizes) < 2 or args.degree < 1 or args.dim < 1:
        parser.error("--nodes: counts of at least 2; --degree and --dim at least 1")
    with common.scratch("convert-memory.", args.work_dir) as work:
        rows = [measure(n, args, work) for n in sizes]
    first, last = rows[0], rows[-1]
    report = {
        "benchmark": "convert_memory",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "parameters": {
            "layout": "OGB binary (ogbn-papers100M's): data.npz stored, node-label.npz compressed, split/time",
            "graph": f"R-MAT, {args.degree} edges drawn per node, {args.dim} x float32 features",
        },
        "sizes": rows,
        "figures": {
            "input_ratio": round(last["input_bytes"] / first["input_bytes"], 2),
            "peak_rss_ratio": round(last["convert_peak_rss_mib"] / first["convert_peak_rss_mib"], 2),
            # What a node adds to the profile's memory (the interpreter and numba's runtime are the rest).
            "profile_anon_bytes_per_added_node": round(
                (last["profile_peak_anon_mib"] - first["profile_peak_anon_mib"])
                * 2**20
                / max(1, last["nodes"] - first["nodes"]),
                1,
            ),
        },
        "machine": common.machine(),
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
