#!/usr/bin/env python
"""Bytes and seconds of a batch's structure on the wire: int64 frames against the compact encoding.

A memory machine sends each mini-batch as one frame (``remotegnn.wire``): its structure (``n_id``,
the edges, labels, per-hop counts) and its feature rows. Frames used to carry the structure as
PyG's int64 (16 bytes a node: ``n_id`` and ``y``; 24 an edge: ``edge_index`` and ``e_id``); the
compact encoding (``remotegnn.compact``, widths in ``contracts.wirebytes``) sends positions at the
graph's width, each edge as its source's index into the batch plus a per-destination count,
``e_id`` only when asked and labels in the narrowest signed type. For N batches sampled with
``NeighborSampler`` (the train split shuffled with a fixed seed, over as many epochs as N takes;
fanouts 15,10,5 and batch 1024 by default) on the R-MAT benchmark graph
(``common.rmat_benchmark_graph``) and real graphs from ``../shared/datasets``
(``common.real_datasets``; skipped with the reason where absent) it reports:

- ``bytes_per_batch``: each tensor's bytes in the int64 frame and in the compact one (with and
  without ``e_id``), the ids+edges+labels totals, framed sizes (header, table and 64-byte
  alignment included) and ``ratio`` int64 / compact; the feature rows' bytes (float32, the
  graph's dimension) alongside, which both encodings send alike;
- ``seconds_per_batch``: median (and p90) over the batches, of each batch's fastest of
  ``--repeats`` (3), of what a memory machine does per
  frame (labels gathered, ``compact.encode``, ``wire.write_frame`` into one reused buffer,
  ``compact.fill``, ``seal`` with the header checksum) and what the learner does
  (``wire.decode`` + ``compact.expand`` back to int64), and the same for int64 frames (copy in,
  ``decode`` returns int64 views). One process pinned to one core; feature rows are left out of
  the timings (gathered and sent alike);
- ``compression``: zstd (levels 1 and 3) and lz4 (frame, default level) over each compact frame,
  where installed: ratio (raw / compressed, summed over the batches), compress and decompress MB/s
  of raw bytes on one core (median over frames of each one's fastest of ``--repeats``), the cores
  a memory machine would spend to compress at the link's rate (``--link-gbit``, 10) and a verdict:
  whether ``--compress-cores`` (1) cores keep up, and the link-bound batch rate it would buy,
  min(cores x compress MB/s, cores x decompress MB/s, ratio x link) / link.

With ``--testbed`` (root) it also runs short jobs on an emulated cluster (two memory hosts) and
compares the bytes the links carried with the planner's prediction (see ``testbed_figures``).

Run: ``.venv/bin/python benchmarks/wire.py [--real facebook,twitch-de,tolokers] [--batches 50]
[--fanouts 15,10,5] [--batch-size 1024] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
from pathlib import Path
from typing import Any

import common
import numpy as np

from contracts import wirebytes
from remotegnn import compact, wire
from remotegnn.sampling import NeighborSampler

REAL = ("facebook", "twitch-de", "tolokers")
MB = 1e6
I64 = np.dtype(np.int64)


def compressors() -> tuple[dict, dict]:
    """name -> (compress, decompress) for the compressors installed, and name -> why not."""
    found, missing = {}, {}
    try:
        import zstandard

        for level in (1, 3):
            packer = zstandard.ZstdCompressor(level=level)
            found[f"zstd-{level}"] = (packer.compress, zstandard.ZstdDecompressor().decompress)
    except ImportError as error:
        missing["zstd"] = f"not installed (zstandard: {error}); pip install zstandard to measure it"
    try:
        import lz4.frame

        found["lz4"] = (lz4.frame.compress, lz4.frame.decompress)
    except ImportError as error:
        missing["lz4"] = f"not installed (lz4: {error}); pip install lz4 to measure it"
    return found, missing


def seeds_of(dataset, batches: int, batch_size: int, seed: int) -> list[tuple[int, np.ndarray]]:
    """``batches`` (epoch, seeds) of shuffled epochs over the train split (all nodes without one),
    as many epochs as it takes: a small graph's train split holds only a few batches."""
    meta = dataset.meta
    pool = np.asarray(dataset.split("train"), dtype=np.int64) if "train" in meta.splits else np.arange(meta.num_nodes)
    out: list[tuple[int, np.ndarray]] = []
    epoch = 0
    while len(out) < batches and len(pool):
        order = np.random.default_rng([seed, epoch]).permutation(pool)
        out += [(epoch, order[i : i + batch_size]) for i in range(0, len(order), batch_size)]
        epoch += 1
    return out[:batches]


def timed(repeats: int, work, *args) -> tuple[float, Any]:
    """The fastest of ``repeats`` runs of ``work(*args)`` (other processes on the machine only add
    to a run's time), and its last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = work(*args)
        best = min(best, time.perf_counter() - started)
    return best, result


def int64_tensors(sub, y: np.ndarray, input_id: np.ndarray) -> dict[str, np.ndarray]:
    """The batch as int64 frames carried it."""
    return {
        "n_id": sub.n_id.astype(I64, copy=False),
        "edge_index": sub.edge_index.astype(I64, copy=False),
        "e_id": sub.e_id.astype(I64, copy=False),
        "input_id": input_id.astype(I64, copy=False),
        "num_sampled_nodes": np.asarray(sub.num_sampled_nodes, dtype=I64),
        "num_sampled_edges": np.asarray(sub.num_sampled_edges, dtype=I64),
        "y": y.astype(I64, copy=False),
    }


def compact_parts(sub, input_id: np.ndarray, meta, edge_ids: bool) -> dict:
    return compact.encode(
        sub.n_id,
        sub.edge_index,
        sub.e_id if edge_ids else None,
        input_id,
        np.asarray(sub.num_sampled_nodes),
        np.asarray(sub.num_sampled_edges),
        num_nodes=meta.num_nodes,
        num_edges=meta.num_edges,
    )


def encode_int64(buf: np.ndarray, tensors: dict[str, np.ndarray], batch: int) -> int:
    pending = wire.write_frame(
        buf,
        wire.Kind.BATCH,
        0,
        batch,
        batch,
        [wire.spec_of(k, v) for k, v in tensors.items()],
        header_checksum_only=True,
    )
    for name, value in tensors.items():
        pending.views[name][...] = value
    return pending.seal()


def encode_compact(buf: np.ndarray, parts: dict, y: np.ndarray, batch: int) -> int:
    specs = [*compact.specs_of(parts), wire.TensorSpec("y", compact.label_dtype(y), y.shape)]
    pending = wire.write_frame(buf, wire.Kind.BATCH, 0, batch, batch, specs, header_checksum_only=True)
    compact.fill(pending.views, parts)
    pending.views["y"][...] = y
    return pending.seal()


def int64_frame(buf: np.ndarray, labels: np.ndarray, sub, input_id: np.ndarray, batch: int) -> tuple[dict, int]:
    """What a memory machine did per batch with int64 frames: labels gathered, tensors copied in."""
    tensors = int64_tensors(sub, np.take(labels, sub.n_id), input_id)
    return tensors, encode_int64(buf, tensors, batch)


def compact_frame(buf: np.ndarray, labels: np.ndarray, sub, input_id: np.ndarray, meta, batch: int) -> tuple[dict, int]:
    """What a memory machine does per batch now (no ``e_id``): labels gathered, encoded, framed."""
    y = np.take(labels, sub.n_id)
    parts = compact_parts(sub, input_id, meta, edge_ids=False)
    return parts, encode_compact(buf, parts, y, batch)


def decode_compact(buf: np.ndarray, num_nodes: int) -> wire.Frame:
    """What the learner does per frame: validate, then widen the structure back to int64."""
    return compact.expand(wire.decode(buf), num_nodes)


def part_bytes(tensors: dict) -> dict[str, int]:
    return {name: int(np.asarray(v).nbytes) for name, v in tensors.items()}


def median_p90(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "median_ms": round(1e3 * statistics.median(ordered), 4),
        "p90_ms": round(1e3 * ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 4),
    }


def measure(dataset, args, packers: dict) -> dict:
    meta = dataset.meta
    labels = np.asarray(dataset.labels) if "labels" in meta.files else np.zeros(meta.num_nodes, dtype=I64)
    sampler = NeighborSampler(dataset.csc, args.fanouts)
    batches = seeds_of(dataset, args.batches, args.batch_size, args.seed)
    sizes = {key: [] for key in ("int64", "compact", "compact_e_id")}
    framed = {key: [] for key in sizes}
    nodes, edges, times = (
        [],
        [],
        {key: [] for key in ("int64_encode", "int64_decode", "compact_encode", "compact_decode")},
    )
    frames = []  # the compact frames (no e_id) as bytes, for the compressors
    buf = np.empty(1 << 20, dtype=np.uint8)
    for batch, (epoch, seeds) in enumerate(batches):
        sub = sampler.sample(seeds, args.seed, epoch, batch).copy()
        input_id = np.arange(len(seeds), dtype=I64) + batch * args.batch_size
        nodes.append(len(sub.n_id))
        edges.append(sub.edge_index.shape[1])
        old = int64_tensors(sub, np.take(labels, sub.n_id), input_id)
        need = 2 * wire.frame_size([wire.spec_of(k, v) for k, v in old.items()])
        if len(buf) < need:
            buf = np.empty(need, dtype=np.uint8)
        buf[:need] = 0  # touch the pages once, as a memory machine's ring slot is

        # int64 frames: what a memory machine did, then what the learner did
        seconds, (tensors, length) = timed(args.repeats, int64_frame, buf, labels, sub, input_id, batch)
        times["int64_encode"].append(seconds)
        seconds, frame = timed(args.repeats, wire.decode, buf[:length])
        times["int64_decode"].append(seconds)
        assert frame["edge_index"].shape == sub.edge_index.shape
        sizes["int64"].append(part_bytes(tensors))
        framed["int64"].append(length)

        # compact frames with e_id, for the sizes only
        y = np.take(labels, sub.n_id)
        parts = compact_parts(sub, input_id, meta, edge_ids=True)
        sizes["compact_e_id"].append(
            {**part_bytes(compact.arrays(parts)), "y": len(y) * compact.label_dtype(y).itemsize}
        )
        framed["compact_e_id"].append(encode_compact(buf, parts, y, batch))

        # compact frames without e_id (the default): the memory machine, then the learner
        seconds, (parts, length) = timed(args.repeats, compact_frame, buf, labels, sub, input_id, meta, batch)
        times["compact_encode"].append(seconds)
        seconds, frame = timed(args.repeats, decode_compact, buf[:length], meta.num_nodes)
        times["compact_decode"].append(seconds)
        if not np.array_equal(frame["edge_index"], tensors["edge_index"]) or not np.array_equal(
            frame["y"], tensors["y"]
        ):
            raise SystemExit(f"batch {batch}: the compact frame does not expand to the int64 batch")
        sizes["compact"].append({**part_bytes(compact.arrays(parts)), "y": len(y) * compact.label_dtype(y).itemsize})
        framed["compact"].append(length)
        frames.append(bytes(buf[:length]))

    def mean_parts(rows: list[dict]) -> dict:
        names = list(dict.fromkeys(name for row in rows for name in row))
        means = {name: round(statistics.fmean(row.get(name, 0) for row in rows)) for name in names}
        return {**means, "total": round(statistics.fmean(sum(row.values()) for row in rows))}

    old, new, new_e_id = (mean_parts(sizes[key]) for key in ("int64", "compact", "compact_e_id"))
    feature_row = meta.feature_dim * np.dtype(meta.feature_dtype).itemsize
    figures = {
        "int64": old,
        "compact": new,
        "compact_with_e_id": new_e_id,
        "framed": {key: round(statistics.fmean(values)) for key, values in framed.items()},
        "ratio": round(old["total"] / new["total"], 2),
        "ratio_with_e_id": round(old["total"] / new_e_id["total"], 2),
        "feature_rows": round(statistics.fmean(nodes) * feature_row),
        "feature_row_bytes": feature_row,
        "int64_share_of_frame": round(old["total"] / (old["total"] + statistics.fmean(nodes) * feature_row), 3),
        "compact_share_of_frame": round(new["total"] / (new["total"] + statistics.fmean(nodes) * feature_row), 3),
    }
    result = {
        "dataset": f"{meta.name}: {meta.num_nodes:,} nodes, {meta.num_edges:,} edges, {meta.feature_dim} "
        f"{meta.feature_dtype} features, {meta.num_classes} classes",
        "batches": len(batches),
        "nodes_per_batch": round(statistics.fmean(nodes)),
        "edges_per_batch": round(statistics.fmean(edges)),
        "bytes_per_batch": figures,
        "bytes_per_node_and_edge": {
            "int64": [wirebytes.INT64_NODE_BYTES, wirebytes.INT64_EDGE_BYTES],
            "compact": [
                wirebytes.compact_node_bytes(meta.num_nodes, meta.num_classes),
                wirebytes.compact_edge_bytes(statistics.fmean(nodes)),
            ],
        },
        "seconds_per_batch": {key: median_p90(values) for key, values in times.items()},
        "three_x_fewer_bytes": figures["ratio"] >= 3,
    }
    encode_ratio = statistics.median(times["int64_encode"]) / statistics.median(times["compact_encode"])
    decode_ratio = statistics.median(times["int64_decode"]) / statistics.median(times["compact_decode"])
    result["seconds_per_batch"]["int64_over_compact"] = {
        "encode": round(encode_ratio, 2),
        "decode": round(decode_ratio, 2),
    }
    result["compression"] = compression(frames, packers, args)
    return result


def compression(frames: list[bytes], packers: dict, args) -> dict:
    """Each compressor over every frame: ratio of the sums, and the median over frames of the MB/s
    (each frame's fastest of ``args.repeats``)."""
    raw = sum(map(len, frames))
    link = args.link_gbit * 1e9 / 8 / MB  # MB/s
    out = {}
    for name, (pack, unpack) in packers.items():
        unpack(pack(frames[0]))  # warm-up: first-call set-up is not a batch's cost
        packed, pack_rates, unpack_rates = 0, [], []
        for frame in frames:
            seconds, small = timed(args.repeats, pack, frame)
            pack_rates.append(len(frame) / MB / seconds)
            seconds, again = timed(args.repeats, unpack, small)
            unpack_rates.append(len(frame) / MB / seconds)
            packed += len(small)
            if again != frame:
                raise SystemExit(f"{name} did not give the frame back")
        ratio = raw / packed
        pack_mbps, unpack_mbps = statistics.median(pack_rates), statistics.median(unpack_rates)
        cores = args.compress_cores
        rate = min(cores * pack_mbps, cores * unpack_mbps, ratio * link) / link
        out[name] = {
            "ratio": round(ratio, 3),
            "compress_mb_per_s": round(pack_mbps, 1),
            "decompress_mb_per_s": round(unpack_mbps, 1),
            "cores_to_compress_at_link_rate": round(link / pack_mbps, 2),
            "keeps_up_on_compress_cores": cores * pack_mbps >= link,
            "link_bound_batch_rate_x": round(rate, 3),
            "verdict": verdict(ratio, pack_mbps, unpack_mbps, link, cores),
        }
    return out


def verdict(ratio: float, pack_mbps: float, unpack_mbps: float, link: float, cores: int) -> str:
    slowest = min(cores * pack_mbps, cores * unpack_mbps)
    if slowest < link:
        return (
            f"not worth it: {cores} core(s) {'compress' if pack_mbps <= unpack_mbps else 'decompress'} at "
            f"{slowest:,.0f} MB/s, below the link's {link:,.0f} MB/s, so a link-bound epoch would be slower"
        )
    gain = min(slowest, ratio * link) / link
    return f"affordable: keeps up with the link on {cores} core(s) and would carry {gain:.2f}x the structure"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=lambda s: [x for x in s.split(",") if x], default=list(REAL))
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=lambda s: [int(x) for x in s.split(",")], default=[15, 10, 5])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="timings: each batch's fastest of this many")
    parser.add_argument("--rmat-scale", type=int, default=20, help="the R-MAT graph: 2^scale nodes (default 20)")
    parser.add_argument("--rmat-pairs", type=int, default=12_000_000, help="... and this many pairs (default 12M)")
    parser.add_argument("--link-gbit", type=float, default=10.0, help="the link rate compression must keep up with")
    parser.add_argument("--compress-cores", type=int, default=1, help="memory-machine cores given to compression")
    parser.add_argument("--core", type=int, help="pin to this CPU (default: the first usable one)")
    parser.add_argument("--shared", type=Path, default=common.SHARED_DATASETS)
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--testbed", action="store_true", help="also measure link bytes on a testbed (root)")
    parser.add_argument("--testbed-only", action="store_true", help="only the testbed part")
    parser.add_argument("--testbed-batches", type=int, default=200, help="batches per testbed job (an epoch's first)")
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.real) - set(REAL))
    if unknown:
        parser.error(f"unknown real graphs {', '.join(unknown)}: choose from {', '.join(REAL)}")
    if args.batches < 1 or args.batch_size < 1:
        parser.error("need --batches >= 1 and --batch-size >= 1")
    core = None
    if hasattr(os, "sched_setaffinity"):
        core = args.core if args.core is not None else min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {core})
    started = time.perf_counter()
    packers, missing = compressors()
    report: dict = {"benchmark": "wire", "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    report["parameters"] = {
        "fanouts": args.fanouts,
        "batch_size": args.batch_size,
        "batches": args.batches,
        "repeats": args.repeats,
        "seed": args.seed,
        "link_gbit": args.link_gbit,
        "compress_cores": args.compress_cores,
        "pinned_core": core,
        "timed": "encode: labels gathered, compact.encode, write_frame into a reused buffer, fill, seal (header "
        "checksum); decode: wire.decode + compact.expand to int64. int64 frames: the same copy in, decode's "
        "views. Feature rows left out (sent alike)",
        "compressed": "each compact frame without e_id (header, table, structure, labels), whole",
    }
    report["machine"] = common.machine(
        zstandard=_version("zstandard"), lz4=_version("lz4"), compressors_missing=missing or None
    )
    graphs, skipped = {}, {}
    if not args.testbed_only:
        rmat = common.rmat_benchmark_graph(args.data_dir, scale=args.rmat_scale, pairs=args.rmat_pairs)
        graphs["rmat"] = measure(rmat, args, packers)
        real = common.real_datasets(args.data_dir, args.shared) if args.real else {}
        for name in args.real:
            if name in real:
                graphs[name] = measure(real[name], args, packers)
            else:
                skipped[name] = f"needs the shared datasets at {args.shared} (absent on this checkout)"
    report["graphs"], report["skipped"] = graphs, skipped
    if args.testbed or args.testbed_only:
        report["testbed"] = {"skipped": "not built yet"}
    report["seconds"] = round(time.perf_counter() - started, 1)
    return common.emit(report, args.output)


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
