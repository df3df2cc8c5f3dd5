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
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import common
import numpy as np

from contracts import wirebytes
from contracts.workload import DEFAULT_FANOUTS
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


# --- the testbed: bytes on the learner's link per epoch, measured and as the planner prices them ---

TESTBED_STATE = Path("/run/memorybridge/wire")  # its own testbeds only: down --all never meets another's
TESTBED_PREFIX = "mbwire"
TESTBED_GRAPH = dict(nodes=65536, edges=524288, dim=128, classes=8, seed=0, train=0.2)
TESTBED_HOSTS = dict(memory_hosts=2, link_gbit=1.0, volume_mbps=250.0, volume_iops=64000)
TESTBED_CACHE = 0.6  # each memory host's RAM cache: this share of the feature bytes
TESTBED_LEARNER_CACHE = 0.3  # the learner's cache by default: this share of the feature bytes
SAMPLING_MODES = ("memory", "learner")


def learner_sampling_missing() -> str | None:
    """Why the loader cannot sample on the learner yet, or None when it can."""
    import inspect

    from remotegnn.loader import DistributedGraphLoader

    if "sampling" in inspect.signature(DistributedGraphLoader).parameters:
        return None
    return "DistributedGraphLoader has no sampling parameter in this checkout (learner-side sampling is not in yet)"


def link_counters() -> dict[str, int]:
    """This network namespace's eth0 byte counters (``/proc/net/dev`` is per namespace)."""
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "eth0":
            fields = rest.split()
            return {"rx_bytes": int(fields[0]), "tx_bytes": int(fields[8])}
    return {"rx_bytes": 0, "tx_bytes": 0}


def structure_bytes(batch, num_nodes: int, num_edges: int) -> tuple[int, int]:
    """A batch's structure as the compact encoding frames it (no ``e_id``) and as int64 frames did."""
    n_id, edge_index = batch.n_id.numpy(), batch.edge_index.numpy()
    hop_nodes, hop_edges = np.asarray(batch.num_sampled_nodes), np.asarray(batch.num_sampled_edges)
    seeds = np.asarray(batch.input_id) if getattr(batch, "input_id", None) is not None else n_id[: batch.batch_size]
    parts = compact.encode(
        n_id, edge_index, None, seeds, hop_nodes, hop_edges, num_nodes=num_nodes, num_edges=num_edges
    )
    y = batch.y.numpy()
    new = sum(values.nbytes for values in compact.arrays(parts).values()) + len(y) * compact.label_dtype(y).itemsize
    old = 8 * (2 * len(n_id) + 3 * edge_index.shape[1] + len(seeds) + len(hop_nodes) + len(hop_edges))
    return new, old


def job(argv: list[str]) -> int:
    """The learner of a testbed job: iterate the loader's batches (no training: the link is what is
    measured), reading this host's link counters around each epoch; print one JSON document."""
    parser = argparse.ArgumentParser(prog="wire.py job")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--fanouts", type=lambda s: [int(x) for x in s.split(",")], required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--cache-bytes", type=int, required=True)
    parser.add_argument("--learner-cache-bytes", type=int, required=True)
    parser.add_argument("--sampling", choices=SAMPLING_MODES, default="memory")
    args = parser.parse_args(argv)
    from foundation.units import GIB
    from remotegnn.loader import DistributedGraphLoader
    from remotegnn.server import ServerOptions
    from remotegnn.store import GraphDataset

    meta = GraphDataset.open(args.dataset).meta
    extra = {} if args.sampling == "memory" else {"sampling": args.sampling}
    loader = DistributedGraphLoader(
        args.dataset,
        num_neighbors=args.fanouts,
        input_nodes="train",
        shuffle=True,
        batch_size=args.batch_size,
        learner_cache=args.learner_cache_bytes,
        server=ServerOptions(cache_bytes=args.cache_bytes, cache_policy="degree", batch_creators=1, vector_loaders=1),
        **extra,
    )
    epochs = []
    try:
        for _ in range(args.epochs):
            before, started = link_counters(), time.perf_counter()
            batches = nodes = edges = compact_bytes = int64_bytes = 0
            for batch in loader:
                new, old = structure_bytes(batch, meta.num_nodes, meta.num_edges)
                batches, nodes, edges = batches + 1, nodes + len(batch.n_id), edges + batch.edge_index.shape[1]
                compact_bytes, int64_bytes = compact_bytes + new, int64_bytes + old
            seconds = time.perf_counter() - started
            after = link_counters()
            epochs.append(
                {
                    "seconds": round(seconds, 3),
                    "batches": batches,
                    "batches_per_s": round(batches / seconds, 2),
                    "nodes": nodes,
                    "edges": edges,
                    "structure_compact_bytes": compact_bytes,
                    "structure_int64_bytes": int64_bytes,
                    "link": {key: after[key] - before[key] for key in after},
                    "stats": loader.last_stats.model_dump(mode="json"),
                }
            )
    finally:
        loader.close()
    learner_gib = loader.caches[0].learner_bytes / GIB if loader.caches else 0.0
    print(json.dumps({"sampling": args.sampling, "learner_cache_gib": learner_gib, "epochs": epochs}))
    return 0


def testbed_graph(workdir: Path, fanouts: list[int], batch_size: int) -> tuple[Path, Path, int]:
    """The testbed's synthetic graph (made once), its profile with this batch's measured shape,
    and its feature bytes."""
    import subprocess

    from contracts.profile import load_profile
    from remotegnn.store import GraphDataset
    from remotegnn.synth import SynthSpec, synth

    path, profile = workdir / "graph", workdir / "profile.json"
    if not (path / "meta.json").exists():
        synth(SynthSpec(**TESTBED_GRAPH), path, overwrite=True, progress=False)
    text = ",".join(map(str, fanouts))
    if not profile.exists() or not load_profile(profile).measured_batch(fanouts, batch_size):
        remotegnn = Path(sys.executable).parent / "remotegnn"
        subprocess.run(
            [str(remotegnn), "profile", str(path), "--fanout", text, "--shape-fanouts", text]
            + ["--batch-size", str(batch_size), "-o", str(profile)],
            check=True,
            capture_output=True,
        )
    meta = GraphDataset.open(path).meta
    return path, profile, meta.num_nodes * meta.feature_dim * 4


def predicted(profile: Path, fanouts: list[int], batch_size: int, cache_bytes: int, learner_gib: float, mode: str):
    """The planner's bytes per epoch on the learner's link for the same emulated cluster and workload."""
    from contracts.calibration import Coefficients
    from contracts.profile import load_profile
    from contracts.workload import Workload
    from foundation.fileio import read_model
    from planner.calibration.testbed import EmulatedCluster, link_bytes, model_inputs

    coefficients = read_model(
        Path(__file__).resolve().parents[1] / "pricing_data" / "calibration-testbed.json", Coefficients, "calibration"
    )
    machine = EmulatedCluster(
        memory_hosts=TESTBED_HOSTS["memory_hosts"],
        cores=2,  # one batch creator and one vector loader per memory host
        link_gbit=TESTBED_HOSTS["link_gbit"],
        volume_mbps=TESTBED_HOSTS["volume_mbps"],
        volume_iops=TESTBED_HOSTS["volume_iops"],
        cache_bytes=cache_bytes,
    )
    workload = Workload(
        fanouts=fanouts,
        batch_size=batch_size,
        hidden_dim=16,
        epochs=1,
        cache_policy="degree",
        learner_cache=learner_gib if learner_gib else "none",
        wire_dtype="float32",
        sampling=mode,
    )
    plan = link_bytes(machine, load_profile(profile), workload, coefficients)
    shape = model_inputs(machine, load_profile(profile), workload, coefficients)[0].batch
    int64_gb = shape.batches_per_epoch * (
        wirebytes.INT64_NODE_BYTES * shape.nodes + wirebytes.INT64_EDGE_BYTES * shape.edges
    )
    return {
        "id_gb": round(plan.id_gb, 5),
        "feature_gb": round(plan.feature_gb, 5),
        "total_gb": round(plan.total_gb, 5),
        "int64_frames_gb": round(plan.feature_gb + int64_gb / 1e9, 5),
        "batch": {"nodes": round(shape.nodes), "edges": round(shape.edges), "per_epoch": shape.batches_per_epoch},
    }


def testbed_run(args, graph: Path, profile: Path, feature_bytes: int, mode: str) -> dict:
    """One testbed with two memory hosts, one job of ``mode``, removed whatever happens."""
    from contracts.testbed import TestbedSpec
    from testbed import job as jobs
    from testbed import lifecycle
    from testbed.state import new_name

    spec = TestbedSpec(name=new_name(TESTBED_PREFIX), dataset=graph, **TESTBED_HOSTS)
    cache_bytes = int(TESTBED_CACHE * feature_bytes)
    train = [sys.executable, str(Path(__file__).resolve()), "job", "--dataset", str(graph)]
    train += ["--fanouts", ",".join(map(str, args.testbed_fanouts)), "--batch-size", str(args.testbed_batch_size)]
    train += ["--epochs", str(args.testbed_epochs), "--cache-bytes", str(cache_bytes)]
    train += ["--learner-cache-bytes", str(int(args.testbed_learner_cache * feature_bytes)), "--sampling", mode]
    serve = ["--volume-mbps", str(TESTBED_HOSTS["volume_mbps"]), "--volume-iops", str(TESTBED_HOSTS["volume_iops"])]
    runs = args.data_dir / "wire-testbed" / "runs.json"
    started = time.perf_counter()
    try:
        bed = lifecycle.up(spec, TESTBED_STATE)
        with common.job_output_to_stderr():
            record = jobs.run_training(TESTBED_STATE, bed, train, runs, serve_args=serve)
    finally:
        lifecycle.down_all(TESTBED_STATE, TESTBED_PREFIX)
    if record.exit_code != 0 or not record.output:
        return {
            "failed": f"exit {record.exit_code}: {record.output_note}",
            "wall_s": round(time.perf_counter() - started, 1),
        }
    output = record.output
    steady = output["epochs"][-1]  # the last epoch: the learner cache is filled, nothing starts up
    plan = predicted(
        profile, args.testbed_fanouts, args.testbed_batch_size, cache_bytes, output["learner_cache_gib"], mode
    )
    stats = steady["stats"]
    frames = stats["bytes_sent"]
    received = steady["link"]["rx_bytes"]
    both = received + steady["link"]["tx_bytes"]  # a sampling learner's requests go out
    old = both - steady["structure_compact_bytes"] + steady["structure_int64_bytes"]
    return {
        "wall_s": round(time.perf_counter() - started, 1),
        "epochs": output["epochs"],
        "learner_cache_gib": round(output["learner_cache_gib"], 4),
        "steady_epoch": {
            "batches": steady["batches"],
            "batches_per_s": steady["batches_per_s"],
            "learner_link_gb": round(both / 1e9, 5),
            "learner_link_rx_gb": round(received / 1e9, 5),
            "learner_link_tx_gb": round(steady["link"]["tx_bytes"] / 1e9, 5),
            "frame_gb": round(frames / 1e9, 5),
            "structure_compact_gb": round(steady["structure_compact_bytes"] / 1e9, 5),
            "feature_rows_sent": stats["rows_sent"],
        },
        "planner": plan,
        "measured_over_planner": round(both / 1e9 / plan["total_gb"], 4),
        "frames_over_planner": round(frames / 1e9 / plan["total_gb"], 4),
        "within_5_percent": abs(both / 1e9 / plan["total_gb"] - 1) <= 0.05,
        "int64_frames_computed": {
            "learner_link_gb": round(old / 1e9, 5),
            "how": "not run: the measured link bytes (rx + tx) with each batch's compact structure replaced by its "
            "int64 structure (16 B a node, 24 an edge, 8 a seed and a hop count), from the batches' shapes; the "
            "planner's figure is its batch shape at those widths plus its feature bytes",
            "over_compact": round(old / both, 3) if both else None,
            "planner_gb": plan["int64_frames_gb"],
            "measured_over_planner": round(old / 1e9 / plan["int64_frames_gb"], 4),
        },
    }


def testbed_figures(args) -> dict:
    reason = common.testbed_unsupported()
    if reason:
        return {"skipped": f"needs root, network namespaces and MPI: {reason}"}
    workdir = args.data_dir / "wire-testbed"
    workdir.mkdir(parents=True, exist_ok=True)
    graph, profile, feature_bytes = testbed_graph(workdir, args.testbed_fanouts, args.testbed_batch_size)
    out: dict = {
        "graph": TESTBED_GRAPH,
        "hosts": TESTBED_HOSTS,
        "memory_cache_share": TESTBED_CACHE,
        "learner_cache_share": args.testbed_learner_cache,
        "fanouts": args.testbed_fanouts,
        "batch_size": args.testbed_batch_size,
        "epochs": args.testbed_epochs,
        "measured": "the learner host's eth0 rx + tx bytes (/proc/net/dev in its namespace) over the last epoch: "
        "frames from both memory hosts (and a sampling learner's requests) with their MPI, TCP, IP and Ethernet "
        "headers, credits and ACKs",
        "planner": "planner.calibration.testbed.link_bytes (a plan's wire_id_gb_per_epoch + wire_feature_gb_per_epoch) "
        "for the same emulated cluster, workload and learner cache, with pricing_data/calibration-testbed.json",
        "modes": {},
    }
    for mode in args.testbed_modes:
        missing = learner_sampling_missing() if mode == "learner" else None
        if missing:
            plan = predicted(
                profile,
                args.testbed_fanouts,
                args.testbed_batch_size,
                int(TESTBED_CACHE * feature_bytes),
                args.testbed_learner_cache * feature_bytes / 2**30,
                mode,
            )
            out["modes"][mode] = {"skipped": missing, "planner": plan}
            continue
        out["modes"][mode] = testbed_run(args, graph, profile, feature_bytes, mode)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["job"]:
        return job(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=lambda s: [x for x in s.split(",") if x], default=list(REAL))
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=lambda s: [int(x) for x in s.split(",")], default=list(DEFAULT_FANOUTS))
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
    parser.add_argument("--testbed-fanouts", type=lambda s: [int(x) for x in s.split(",")], default=[10, 5])
    parser.add_argument("--testbed-batch-size", type=int, default=256)
    parser.add_argument("--testbed-epochs", type=int, default=2, help="per job; the last is compared")
    parser.add_argument(
        "--testbed-learner-cache",
        type=float,
        default=TESTBED_LEARNER_CACHE,
        help="the learner cache's share of the feature bytes (0.9: ids and edges are most of the link)",
    )
    parser.add_argument(
        "--testbed-modes",
        type=lambda s: [x for x in s.split(",") if x],
        default=list(SAMPLING_MODES),
        help="who samples in each job: memory (the memory hosts), learner",
    )
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
        report["testbed"] = testbed_figures(args)
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
