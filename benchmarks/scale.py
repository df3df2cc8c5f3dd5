#!/usr/bin/env python
"""A graph larger than this machine's RAM, end to end: made, profiled, planned, and trained out
of core on the testbed, beside PyG's NeighborLoader on the same files.

    sudo .venv/bin/python benchmarks/scale.py --work-dir /data/scale        # about an hour
    sudo .venv/bin/python benchmarks/scale.py --nodes 65536 --dim 16 --min-ram-factor 0   # a small rehearsal

1. `remotegnn synth` writes a power-law (R-MAT) graph whose features plus structure are at least
   ``--min-ram-factor`` times the RAM; its train split is sized so one epoch is ``--batches``
   batches. Then `remotegnn profile` and `planner recommend --dataset-file` run on it. Each of
   the three runs in its own process, whose peak resident set and anonymous memory are reported.
   The graph lies in a filesystem image (``--work-dir``/NAME.img, mounted read-only at
   NAME.vol while the benchmark runs), so each memory host of a testbed reads it through a loop
   device and a page cache of its own, as separate machines do (``--shared-page-cache``: the
   graph in a plain directory, every host on one page cache, as before).
2. For each volume (gp3's baseline, 125 MB/s and 3,000 IOPS, and 1,000 MB/s and 16,000 IOPS) and
   each shard layout (``--layouts``: how rows are dealt to the memory hosts, contracts/shards.py)
   a testbed with ``--memory-hosts`` memory hosts trains GraphSAGE (benchmarks/fidelity_job.py:
   two epochs, the first a warm-up) with the learner cache on ``auto``. Reported: start-up and
   the steady epoch (batches/s, learner stall), bytes each memory host's volume read (its blkio
   group's counter, start-up and both epochs) beside its share of the feature file, the bytes
   sent on the links, the peak RSS of every process of the job (VmHWM, polled), and the
   planner's pipeline-model prediction for the same emulated cluster and layout with the
   testbed calibration (pricing_data/calibration-testbed.json).
3. PyG's NeighborLoader (torch-sparse) samples and trains the same number of batches on the same
   files: features memory-mapped, structure as the SparseTensor PyG samples from (built from the
   dataset's CSC, int64). It runs in a child process whose time and peak RSS are reported, or
   where it failed; a child stopped at ``--pyg-timeout-s`` reports the batches it finished by then.

Prints one JSON document (and writes it with ``--output``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import common

from contracts.shards import READAHEAD_BYTES, SHARD_LAYOUTS
from contracts.workload import DEFAULT_BATCH_SIZE

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
STATE_DIR = Path("/run/memorybridge/scale")  # its own testbeds only: teardown never meets another's
PREFIX = "mbscale"
VOLUMES = {"gp3-baseline": (125.0, 3000), "gp3-1000": (1000.0, 16000)}
FANOUTS, BATCH_SIZE, HIDDEN = common.FANOUTS_TEXT, DEFAULT_BATCH_SIZE, 64
LAYOUTS = ("striped", "modulo")
POLL_S = 0.5  # how often the job's processes' peak RSS is read
# What is read of each process: its peak resident set (VmHWM), and the largest of the two parts
# of it seen: anonymous memory (what it holds) and file pages it maps (the page cache's pages of
# the dataset it has touched, which the kernel may take back at any time).
MEASURES = {"peak_rss_mib": "VmHWM", "max_anon_mib": "RssAnon", "max_file_mib": "RssFile"}
CALIBRATION = ROOT / "pricing_data" / "calibration-testbed.json"
LEARNER_RAM_GIB = 16.0
"""The testbed learner host's RAM: a g4dn.xlarge's, the learner the planner picks for the graph."""
IMAGE_SLACK = 1.25
"""The image's size over the graph's estimated bytes (a sparse file: unused space costs nothing)."""
IMAGE_SPARE_BYTES = 2 << 30
"""More room in the image, for ext4's own blocks and the writer's temporary files."""


def ram_bytes() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def make_graph(args: argparse.Namespace, root: Path) -> tuple[Path, dict]:
    """The graph in ``root`` (made once), its on-disk size against the RAM, and what making it cost."""
    from remotegnn.store import GraphDataset

    path = root / graph_name(args)
    train = args.batches * BATCH_SIZE / args.nodes
    made = None
    if not (path / "meta.json").exists():
        made = common.run_measured(
            [
                PYTHON,
                "-m",
                "remotegnn.cli.main",
                "synth",
                str(path),
                "--nodes",
                str(args.nodes),
                "--edges",
                str(args.edges),
                "--dim",
                str(args.dim),
                "--classes",
                "16",
                "--train",
                f"{train:.9f}",
                "--val",
                "0",
                "--test",
                "0",
                "--overwrite",
            ]
        )
        made = {k: made[k] for k in ("seconds", "peak_rss_mib", "peak_anon_mib")}
    meta = GraphDataset.open(path).meta
    size = sum(entry.bytes for entry in meta.files.values())
    figures = {
        "path": str(path),
        "nodes": meta.num_nodes,
        "stored_edges": meta.num_edges,
        "features": f"{meta.feature_dim} x {meta.feature_dtype}",
        "bytes_on_disk": size,
        "ram_bytes": ram_bytes(),
        "ram_factor": round(size / ram_bytes(), 2),
        "train_seeds": len(GraphDataset.open(path).split("train")),
        "synth": made,
    }
    if figures["ram_factor"] < args.min_ram_factor:
        raise SystemExit(
            f"{path} is {figures['ram_factor']}x the RAM, below --min-ram-factor {args.min_ram_factor}: "
            "raise --nodes or --dim"
        )
    return path, figures


def graph_name(args: argparse.Namespace) -> str:
    return f"rmat-{args.nodes}-{args.edges}-{args.dim}-{args.batches}"


@contextlib.contextmanager
def graph_volume(args: argparse.Namespace) -> Iterator[tuple[Path, dict, dict]]:
    """The graph (``make_graph``: its path and figures) and the volume it lies on, for as long as
    the benchmark runs.

    Unless ``--shared-page-cache``, that is a filesystem image in the work directory, made once
    (sparse, ext4) and mounted from a loop device reading it with direct I/O and a cloud volume's
    read-ahead: read-write while the graph is made, then read-only, as the testbed needs to give
    each memory host a view of its own. Unmounted and detached at the end."""
    if args.shared_page_cache:
        yield (*make_graph(args, args.work_dir), {"image": None})
        return
    name = graph_name(args)
    image, mountpoint = args.work_dir / f"{name}.img", args.work_dir / f"{name}.vol"
    if not image.exists():
        estimate = args.nodes * args.dim * 4 + args.edges * 2 * 16 + args.nodes * 24
        with open(image, "wb") as f:
            f.truncate(int(estimate * IMAGE_SLACK) + IMAGE_SPARE_BYTES)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True)
    mountpoint.mkdir(exist_ok=True)
    argv = ["losetup", "--find", "--show", "--direct-io=on", str(image)]
    loop = Path(subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip())
    try:
        (Path("/sys/block") / loop.name / "queue" / "read_ahead_kb").write_text(str(READAHEAD_BYTES >> 10))
        subprocess.run(["mount", str(loop), str(mountpoint)], check=True)
        try:
            graph, figures = make_graph(args, mountpoint)
            subprocess.run(["mount", "-o", "remount,ro", str(mountpoint)], check=True)
            yield graph, figures, {"image": str(image), "mountpoint": str(mountpoint), "loop": str(loop)}
        finally:
            subprocess.run(["umount", str(mountpoint)], check=True)
    finally:
        subprocess.run(["losetup", "--detach", str(loop)], check=True)


def profile_and_plan(graph: Path, work: Path) -> tuple[Path, dict]:
    profile = work / f"{graph.name}.profile.json"
    profiled = common.run_measured(
        [
            PYTHON,
            "-m",
            "remotegnn.cli.main",
            "profile",
            str(graph),
            "--fanout",
            FANOUTS,
            "--batch-size",
            str(BATCH_SIZE),
            "-o",
            str(profile),
        ]
    )
    planned = common.run_measured(
        [PYTHON, "-m", "planner.cli.main", "recommend", "--dataset-file", str(profile), "--json"]
    )
    plan = json.loads(planned["stdout"])
    keep = ("seconds", "peak_rss_mib", "peak_anon_mib")
    return profile, {
        "profile": {"file": str(profile), **{k: profiled[k] for k in keep}},
        "plan": {**{k: planned[k] for k in keep}, "recommended": _cheapest(plan)},
    }


def _cheapest(plan: dict) -> dict | None:
    """The plan's choice in a few fields: what it rents, what an epoch costs, and why."""
    chosen = plan.get("chosen")
    if not chosen:
        return None
    keep = ("layout", "usd_per_hour", "epoch_seconds", "total_usd", "bottleneck", "explanation")
    return {"learner": chosen["learner"].get("instance_type"), **{k: chosen[k] for k in keep}}


class PeakRss:
    """The peak resident set of every process in a testbed's namespaces, polled while a job runs."""

    def __init__(self, namespaces: list[str]):
        self.namespaces, self.seen, self._stop = namespaces, {}, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        # Scopes read /proc, and never fork: a fork from this thread would hold, until it execs, any
        # file the main thread is writing, and the job's freshly written mpiexec script would not
        # run ("Text file busy").
        from testbed.processes import Scope

        scopes = {ns: Scope([ns]) for ns in self.namespaces}
        while not self._stop.is_set():
            for ns, scope in scopes.items():
                for pid in scope.pids():
                    self._read(ns, str(pid))
            self._stop.wait(POLL_S)

    def _read(self, ns: str, pid: str) -> None:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return  # it exited between the listing and the read
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if "VmHWM" not in fields:
            return  # a kernel thread or a zombie
        host = ns.rsplit("-", 1)[-1]
        entry = self.seen.setdefault(pid, {"host": host, "command": command[:160]} | dict.fromkeys(MEASURES, 0.0))
        for measure, field in MEASURES.items():
            value = int(fields.get(field, "0 kB").split()[0]) / 1024
            entry[measure] = round(max(entry[measure], value), 1)

    def report(self) -> list[dict]:
        return sorted(self.seen.values(), key=lambda e: -e["peak_rss_mib"])


def train_on_testbed(
    graph: Path, profile: Path, volume: str, layout: str, args: argparse.Namespace, runs_file: Path
) -> dict:
    """One testbed, one job (two epochs), the testbed removed whatever happens."""
    from contracts.testbed import TestbedSpec
    from testbed import job, lifecycle
    from testbed.state import new_name
    from testbed.volume import read_bytes as volume_read_bytes

    mbps, iops = VOLUMES[volume]
    spec = TestbedSpec(
        name=new_name(args.prefix),
        memory_hosts=args.memory_hosts,
        link_gbit=args.link_gbit,
        dataset=graph,
        volume_mbps=mbps,
        volume_iops=iops,
        learner_ram_gib=args.learner_ram_gib,
    )
    learner = "auto" if args.learner_cache_gib is None else int(args.learner_cache_gib * 2**30)
    train = common.fidelity_job_argv(
        graph,
        profile,
        fanouts=FANOUTS,
        batch_size=BATCH_SIZE,
        hidden=HIDDEN,
        epochs=2,
        cache_bytes=int(args.cache_gib * 2**30),
        learner_cache_bytes=learner,
        layout=layout,
    )
    serve = ["--volume-mbps", str(mbps), "--volume-iops", str(iops), "--layout", layout]
    try:
        bed = lifecycle.up(spec, args.state_dir)
        with PeakRss(bed.namespaces) as rss, common.job_output_to_stderr():
            job.run_training(args.state_dir, bed, train, runs_file, serve_args=serve)
        assert bed.volume is not None  # the spec names a dataset
        volumes = {h.name: volume_read_bytes(h, bed.volume) for h in bed.memory if h.cgroup is not None}
    finally:
        lifecycle.down_all(args.state_dir, args.prefix)
    return {"volume_read_bytes": volumes, "processes": rss.report()}


def predicted_and_measured(runs_file: Path, profile: Path, disk: dict[str, float] | None, cores: int) -> list[dict]:
    """Each run's steady epoch, and its start-up (the job's wall time less its epochs: launch,
    session open and the cache fills), against the pipeline model with the testbed calibration
    for the layout the memory hosts served (the job's report records it, as calibration reads
    it). With ``disk`` (``disk_read_rates``) each volume reads no faster than this
    machine's disk gives it: in the job, its share of the rate with every memory host reading at
    once; for one host's start-up alone (the probe), the rate of one reader. Likewise the job's
    memory hosts choose and sweep their caches on their share of this machine's ``cores`` (the
    learner's process among them), and the probe on a core of its own; the probe launches no
    job, so its prediction is the model's start-up less the launch."""
    from contracts.calibration import load_coefficients
    from contracts.profile import load_profile
    from contracts.runs import RunsFile
    from foundation.fileio import read_model
    from planner.calibration.fit import observations
    from planner.calibration.runs import load_runs
    from planner.calibration.testbed import predict

    coefficients = load_coefficients(CALIBRATION)
    rows = []
    obs, skipped = observations(load_runs(runs_file))
    walls = [run.wall_s for run in read_model(runs_file, RunsFile, "runs file").runs]
    for o in obs:
        workload = o.report.workload
        hosts = o.machine.memory_hosts
        # In the job the learner shares the cores too: it receives the fill, and MPI spins while it waits.
        job, alone = (
            o.machine.model_copy(
                update={
                    "disk_mbps": disk[str(readers)] / readers if disk else None,
                    "core_share": min(1.0, cores / processes),
                }
            )
            for readers, processes in ((hosts, hosts + 1), (1, 1))
        )
        model = predict(job, load_profile(profile), workload, coefficients)["pipeline"]
        predicted, predicted_startup = float(model.epoch_s[0]), float(model.startup_s[0])
        on_its_own = predict(alone, load_profile(profile), workload, coefficients)["pipeline"]
        host_startup = float(on_its_own.startup_s[0]) - coefficients.job_start_s
        phases = model.detail_at(0)
        steady = o.report.steady_epochs()[-1]
        startup = walls[o.index] - sum(e.seconds for e in o.report.epochs)
        rows.append(
            {
                "measured_epoch_s": round(o.epoch_s, 2),
                "predicted_epoch_s": round(predicted, 2),
                "error_pct": round((predicted - o.epoch_s) / o.epoch_s * 100, 1),
                "batches": steady.batches,
                "batches_per_s": round(steady.batches / steady.seconds, 3),
                "learner_wait_s": round(steady.seconds - steady.compute_s, 2),  # the loop outside its steps
                "bytes_sent": steady.stats.bytes_sent,
                "learner_cache_gib": o.report.workload.learner_cache,
                "hit_rate": round(o.hits / max(1, o.hits + o.misses), 3),
                "measured_startup_s": round(startup, 1),
                "predicted_startup_s": round(predicted_startup, 1),
                "predicted_startup_fixed_s": round(phases["startup_fixed_s"], 1),  # launch, choosing the caches
                "predicted_startup_read_s": round(phases["startup_read_s"], 1),
                "predicted_host_startup_s": round(host_startup, 1),
            }
        )
    return rows + [{"skipped": why} for why in skipped.values()]


def pyg_baseline(graph: Path, batches: int, timeout_s: float) -> dict:
    """PyG's NeighborLoader on the same files, in a child (it may not fit in RAM, or not end).
    The child prints a line per batch, so one that is stopped still says how far it got."""
    done = common.run_measured(
        [PYTHON, str(Path(__file__)), "--pyg-child", str(graph), "--batches", str(batches)],
        check=False,
        timeout_s=timeout_s,
    )
    lines = [json.loads(line) for line in done["stdout"].splitlines() if line.startswith("{")]
    progress = lines[-1] if lines else {}
    memory = {k: done[k] for k in ("peak_rss_mib", "peak_anon_mib")}
    if done["exit"] != 0:
        return {
            "ran": False,
            "exit": done["exit"],
            "timed_out_after_s": timeout_s if done["timed_out"] else None,
            **memory,
            "progress": progress,
            "error": "" if done["timed_out"] else done["stderr"],
        }
    return {"ran": True, **memory, **progress}


def pyg_child(graph: Path, batches: int) -> int:
    """The baseline itself: SparseTensor from the CSC, memory-mapped features, NeighborLoader."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import GraphSAGE
    from torch_sparse import SparseTensor

    from remotegnn.store import GraphDataset

    torch.set_num_threads(1)
    ds = GraphDataset.open(graph)
    started = time.perf_counter()
    indptr = torch.from_numpy(np.asarray(ds.csc.indptr, dtype=np.int64))
    col = torch.from_numpy(np.asarray(ds.csc.indices, dtype=np.int64))  # PyG samples int64 ids
    adj_t = SparseTensor(rowptr=indptr, col=col, sparse_sizes=(ds.meta.num_nodes, ds.meta.num_nodes), is_sorted=True)
    data = Data(x=torch.from_numpy(ds.features), adj_t=adj_t, y=torch.from_numpy(np.asarray(ds.labels)))
    structure_s = time.perf_counter() - started
    train = torch.from_numpy(np.asarray(ds.split("train"), dtype=np.int64))
    loader = NeighborLoader(
        data, num_neighbors=[int(f) for f in FANOUTS.split(",")], input_nodes=train, batch_size=BATCH_SIZE, shuffle=True
    )
    model = GraphSAGE(ds.meta.feature_dim, HIDDEN, num_layers=3, out_channels=ds.meta.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    started = time.perf_counter()
    for done, batch in enumerate(loader, start=1):
        optimizer.zero_grad()
        out = model(batch.x, batch.adj_t)[: batch.batch_size]
        F.cross_entropy(out, batch.y[: batch.batch_size]).backward()
        optimizer.step()
        seconds = time.perf_counter() - started
        progress = {"structure_s": round(structure_s, 1), "batches": done, "seconds": round(seconds, 1)}
        print(json.dumps(progress | {"batches_per_s": round(done / seconds, 3)}), flush=True)
        if done == batches:
            break
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1 << 26)
    parser.add_argument("--edges", type=int, default=1 << 27, help="R-MAT draws, each stored both ways")
    parser.add_argument("--dim", type=int, default=128, help="float32 features per node")
    parser.add_argument("--batches", type=int, default=40, help="batches per epoch (the train split's size)")
    parser.add_argument("--min-ram-factor", type=float, default=1.25, help="refuse a graph smaller than this x RAM")
    parser.add_argument("--cache-gib", type=float, default=1.0, help="each memory rank's feature cache")
    parser.add_argument(
        "--learner-cache-gib",
        type=float,
        help="the learner's cache (default auto: the learner host's RAM available less 8 GiB)",
    )
    parser.add_argument(
        "--learner-ram-gib",
        type=float,
        default=LEARNER_RAM_GIB,
        help="the learner host's RAM, a memory cgroup on the testbed (default: a g4dn.xlarge's, "
        "the learner the planner picks for this graph)",
    )
    parser.add_argument("--link-gbit", type=float, default=10.0, help="each host's link")
    parser.add_argument("--memory-hosts", type=int, default=4, help="memory hosts, each serving its share of the rows")
    parser.add_argument(
        "--layouts",
        default=",".join(LAYOUTS),
        help="how rows are dealt to the memory hosts (remotegnn launch --layout), each run in turn; the first "
        "is the one the others' start-up is compared with",
    )
    parser.add_argument("--volumes", default=",".join(VOLUMES), help=f"which of {', '.join(VOLUMES)}")
    parser.add_argument(
        "--shared-page-cache",
        action="store_true",
        help="make the graph in a plain directory of --work-dir, where every memory host reads it through this "
        "machine's one page cache (default: in a filesystem image, each host reading through its own)",
    )
    parser.add_argument("--no-pyg", action="store_true", help="skip the PyG baseline")
    parser.add_argument("--pyg-timeout-s", type=float, default=600.0, help="stop the PyG baseline after this long")
    parser.add_argument("--work-dir", type=Path, default=common.DATA_DIR / "scale")
    parser.add_argument("--state-dir", type=Path, default=STATE_DIR, help="where its testbeds' state goes")
    parser.add_argument("--prefix", default=PREFIX, help="its testbeds' name prefix (teardown sweeps it)")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--pyg-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--startup-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--probe-volume", choices=tuple(VOLUMES), help=argparse.SUPPRESS)
    parser.add_argument("--probe-learner-cache-bytes", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--probe-into", type=Path, help="add the start-up probes to this report (its jobs ran without them)"
    )
    parser.add_argument(
        "--repredict", type=Path, help="rewrite this report's predictions with today's planner, running nothing"
    )
    args = parser.parse_args(argv)
    if args.pyg_child is not None:
        return pyg_child(args.pyg_child, args.batches)
    if args.repredict is not None:
        return repredict(args.repredict)
    if args.startup_child is not None:
        return startup_child(args.startup_child, args)
    volumes = [v for v in args.volumes.split(",") if v]
    if not volumes or set(volumes) - set(VOLUMES):
        parser.error(f"--volumes: one or more of {', '.join(VOLUMES)}")
    layouts = [v for v in args.layouts.split(",") if v]
    if not layouts or set(layouts) - set(SHARD_LAYOUTS):
        parser.error(f"--layouts: one or more of {', '.join(SHARD_LAYOUTS)}")
    if args.memory_hosts < 1:
        parser.error("--memory-hosts: at least 1")
    if os.geteuid() != 0:
        parser.error("the testbed needs root: run with sudo")
    if args.probe_into is not None:
        return probe_into(args.probe_into, args)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    with graph_volume(args) as (graph, graph_figures, storage):
        return rehearse(args, graph, {**graph_figures, "storage": storage}, volumes, layouts)


def rehearse(args: argparse.Namespace, graph: Path, graph_figures: dict, volumes: list[str], layouts: list[str]) -> int:
    """Steps 1-3 of the module docstring on the graph made (or found) at ``graph``."""
    profile, planning = profile_and_plan(graph, args.work_dir)
    report = {
        "benchmark": "scale",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "parameters": {
            "fanouts": FANOUTS,
            "batch_size": BATCH_SIZE,
            "hidden": HIDDEN,
            "memory_hosts": args.memory_hosts,
            "layouts": layouts,
            "cache_gib_per_memory_rank": args.cache_gib,
            "learner_cache_gib": args.learner_cache_gib or "auto",
            "learner_ram_gib": args.learner_ram_gib,
            "link_gbit": args.link_gbit,
        },
        "graph": graph_figures,
        **planning,
        "testbed": {},
        "machine": common.machine(),
    }
    shares = feature_shares(graph, args.memory_hosts)
    disk = disk_read_rates(graph, args.memory_hosts)
    report["machine"]["disk_read_mb_per_s"] = disk
    for volume in volumes:
        report["testbed"][volume] = {"limits": {"mb_per_s": VOLUMES[volume][0], "iops": VOLUMES[volume][1]}}
        for layout in layouts:
            runs_file = args.work_dir / f"runs-{volume}-{layout}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}.json"
            trained = train_on_testbed(graph, profile, volume, layout, args, runs_file)
            epoch = predicted_and_measured(runs_file, profile, disk, os.cpu_count() or 1)
            learner_cache = int(epoch[0].get("learner_cache_gib", 0) * 2**30)
            report["testbed"][volume][layout] = {
                "runs_file": str(runs_file),
                "epoch": epoch,
                "volume_reads": host_reads(trained["volume_read_bytes"], shares[layout]),
                "startup_probe": startup_probe(graph, volume, layout, args, learner_cache),
                "processes": trained["processes"],
            }
            if args.output:
                common.save(report, args.output)  # hours of runs: what is done so far survives a failure
        report["testbed"][volume]["summary"] = layout_summary(report["testbed"][volume], layouts)
    report["pyg"] = None if args.no_pyg else pyg_baseline(graph, args.batches, args.pyg_timeout_s)
    return common.emit(report, args.output)


def probe_into(report_file: Path, args: argparse.Namespace) -> int:
    """Add each run's start-up probe to a report whose jobs ran without one."""
    report = json.loads(report_file.read_text())
    args.memory_hosts = report["parameters"]["memory_hosts"]
    with graph_volume(args) as (graph, _, _):
        if str(graph) != report["graph"]["path"]:
            made = report["graph"]["path"]
            raise SystemExit(f"--probe-into: the report's graph is {made}; these options give {graph}")
        return _probe_into(report, report_file, graph, args)


def _probe_into(report: dict, report_file: Path, graph: Path, args: argparse.Namespace) -> int:
    for volume, runs in report["testbed"].items():
        for layout, run in runs.items():
            if isinstance(run, dict) and "runs_file" in run:
                learner_cache = int(run["epoch"][0].get("learner_cache_gib", 0) * 2**30)
                run["startup_probe"] = startup_probe(graph, volume, layout, args, learner_cache)
                common.save(report, report_file)
        runs["summary"] = layout_summary(runs, [k for k, v in runs.items() if isinstance(v, dict) and "epoch" in v])
    return common.emit(report, report_file)


def repredict(report_file: Path) -> int:
    """The report again with every run's prediction from today's planner (its measured figures
    as they were: the runs files keep them), for a model changed after the runs."""
    report = json.loads(report_file.read_text())
    profile = Path(report["profile"]["file"])
    disk = report["machine"].get("disk_read_mb_per_s")
    cores = report["machine"].get("cpu_count") or os.cpu_count() or 1
    for volume in report["testbed"].values():
        layouts = [name for name, run in volume.items() if isinstance(run, dict) and "runs_file" in run]
        for layout in layouts:
            runs_file = Path(volume[layout]["runs_file"])
            volume[layout]["epoch"] = predicted_and_measured(runs_file, profile, disk, cores)
        volume["summary"] = layout_summary(volume, layouts)
    return common.emit(report, report_file)


def startup_probe(graph: Path, volume: str, layout: str, args: argparse.Namespace, learner_cache_bytes: int) -> dict:
    """One memory host's start-up reads on their own: the memory cache and its share of the
    learner cache, read in the job's sweep by one process in a blkio group with the volume's
    limits, after the feature file's pages are evicted: what one machine reads and how long it
    takes with this machine's disk and cores to itself. (With ``--shared-page-cache`` the job's
    hosts share this machine's page cache, so a row one host read is a hit for the next, and
    this is the only figure of what a machine of its own would read.)"""
    mbps, iops = VOLUMES[volume]
    argv = [PYTHON, str(Path(__file__)), "--startup-child", str(graph), "--layouts", layout]
    argv += ["--memory-hosts", str(args.memory_hosts), "--cache-gib", str(args.cache_gib)]
    argv += ["--probe-volume", volume, "--probe-learner-cache-bytes", str(learner_cache_bytes)]
    done = common.run_measured(argv)
    return {**json.loads(done["stdout"]), "limits": {"mb_per_s": mbps, "iops": iops}}


def startup_child(graph: Path, args: argparse.Namespace) -> int:
    """The probe itself (``startup_probe``): memory host 0's caches as the job's server builds
    them, then its start-up sweep, timed, with the bytes its blkio group read."""
    from contracts.shards import ShardLayout
    from remotegnn.server import PipelineOptions
    from remotegnn.server.caches import build_caches
    from remotegnn.server.shard import Shard
    from remotegnn.server.startup import chunk_rows, fill_chunks, sweep
    from remotegnn.store import GraphDataset
    from remotegnn.volume.blkio import ThrottleGroup, read_counter
    from remotegnn.volume.detect import blkio_root, detect_emulation
    from testbed.volume import evict

    dataset = GraphDataset.open(graph)
    meta, (layout,) = dataset.meta, args.layouts.split(",")
    support = detect_emulation(dataset.features_path)
    root = blkio_root()
    if root is None or support.device is None:
        raise SystemExit(f"the start-up probe needs a blkio group on the dataset's disk: {support.blkio.reason}")
    group = ThrottleGroup(root, support.device)
    mbps, iops = VOLUMES[args.probe_volume]
    group.limit(round(mbps * 1e6), iops)
    try:
        group.join()
        evict(graph)
        dealt = ShardLayout.of(layout, args.memory_hosts, meta.num_nodes, meta.row_bytes)
        shard = Shard(index=0, count=args.memory_hosts, block_rows=dealt.block_rows)
        options = PipelineOptions(
            num_neighbors=[int(f) for f in FANOUTS.split(",")],
            batch_size=BATCH_SIZE,
            cache_bytes=int(args.cache_gib * 2**30),
            cache_policy="degree",
            learner_cache_bytes=args.probe_learner_cache_bytes,
        )
        started = time.perf_counter()
        caches = build_caches(dataset, options, dataset.split("train"), shard, fill_memory=False)
        chosen = time.perf_counter()
        chunk = chunk_rows(meta.feature_dim * caches.wire_dtype.itemsize)
        chunks = fill_chunks(shard.own_nodes(caches.device_nodes), shard.own_nodes(caches.learner_nodes), chunk)
        rows = sum(len(nodes) for _, nodes, _ in sweep(dataset, caches.memory, chunks, caches.wire_dtype))
        swept = time.perf_counter()
        read = read_counter(group.path, group.device, "io_service_bytes")
    finally:
        group.evacuate()
        group.remove()
    share = dealt.rows(0) * meta.row_bytes
    print(
        json.dumps(
            {
                "host": 0,
                "choose_caches_s": round(chosen - started, 1),
                "sweep_s": round(swept - chosen, 1),
                "learner_rows": rows,
                "memory_rows": caches.memory.capacity,
                "read_bytes": read,
                "share_bytes": share,
                "read_over_share": round(read / share, 3),
            }
        )
    )
    return 0


def disk_read_rates(graph: Path, hosts: int) -> dict[str, float]:
    """MB/s this machine's disk gives one reader, and ``hosts`` readers at once, of the graph's
    feature file: each reads a memory host's share of its rows (a ``1/hosts`` range) front to
    back as the start-up sweep does, past the page cache in steps of a chunk's rows
    (``remotegnn.cache.direct``), after the file's pages are evicted. The testbed's memory hosts
    share this one disk, so a volume limited above what the disk gives it reads at the disk's
    rate. As much as a start-up reads is read: a virtual disk's host may cache part of the file,
    so a short probe would measure its cache."""
    import numpy as np

    from remotegnn.cache.direct import DirectRows
    from remotegnn.server.startup import chunk_rows
    from remotegnn.store import GraphDataset
    from testbed.volume import evict

    dataset = GraphDataset.open(graph)
    meta = dataset.meta
    share, step = meta.num_nodes // hosts, chunk_rows(meta.row_bytes)

    def read(start: int, stop: int) -> None:
        out = np.empty((step, meta.feature_dim), dtype=meta.feature_dtype)
        with DirectRows.of(dataset) as reader:
            for lo in range(start, stop, step):
                nodes = np.arange(lo, min(lo + step, stop), dtype=np.int64)
                reader.read([(nodes, out[: len(nodes)])])

    rates = {}
    for readers in sorted({1, hosts}):
        evict(dataset.features_path)
        threads = [threading.Thread(target=read, args=(i * share, (i + 1) * share)) for i in range(readers)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rates[str(readers)] = round(readers * share * meta.row_bytes / (time.perf_counter() - started) / 1e6, 1)
    evict(dataset.features_path)
    return rates


def feature_shares(graph: Path, hosts: int) -> dict[str, list[int]]:
    """Bytes of the feature file each memory host serves, per layout (the same in every layout
    but the runs they come in)."""
    from contracts.shards import ShardLayout, ShardManifest
    from remotegnn.store import GraphDataset

    meta = GraphDataset.open(graph).meta
    shares = {}
    for layout in SHARD_LAYOUTS:
        dealt = ShardLayout.of(layout, hosts, meta.num_nodes, meta.row_bytes)
        shares[layout] = [s.feature_bytes for s in ShardManifest.of(dealt, meta.row_bytes, 0).shards]
    return shares


def host_reads(read: dict[str, int], shares: list[int]) -> dict[str, dict]:
    """Each memory host's volume reads (start-up and both epochs, structure included) beside its
    share of the feature file."""
    return {
        host: {"read_bytes": read[host], "share_bytes": share, "read_over_share": round(read[host] / share, 3)}
        for host, share in zip(sorted(read), shares)
    }


def layout_summary(runs: dict, layouts: list[str]) -> dict:
    """Per layout: the job's start-up and the worst host's reads, one host's start-up on its own
    (the probe) against the planner's, and both start-ups against the first layout's."""
    summary = {}
    for layout in layouts:
        (epoch,) = [e for e in runs[layout]["epoch"] if "measured_startup_s" in e] or [{}]
        probe = runs[layout].get("startup_probe")
        summary[layout] = {
            "job_startup_s": epoch.get("measured_startup_s"),
            "predicted_startup_s": epoch.get("predicted_startup_s"),
            "job_max_read_over_share": max(h["read_over_share"] for h in runs[layout]["volume_reads"].values()),
        }
        job = summary[layout]["job_startup_s"]
        if job and summary[layout]["predicted_startup_s"]:
            summary[layout]["job_predicted_error_pct"] = round(
                (summary[layout]["predicted_startup_s"] - job) / job * 100, 1
            )
        if probe:
            alone = round(probe["choose_caches_s"] + probe["sweep_s"], 1)
            predicted = epoch.get("predicted_host_startup_s", epoch.get("predicted_startup_s"))
            summary[layout] |= {
                "host_startup_s": alone,
                "predicted_host_startup_s": predicted,
                "host_read_over_share": probe["read_over_share"],
                "predicted_error_pct": round((predicted - alone) / alone * 100, 1) if predicted else None,
            }
    first = summary[layouts[0]]
    for layout in layouts[1:]:
        for key in ("job_startup_s", "host_startup_s"):
            if first.get(key) and summary[layout].get(key):
                summary[layout][f"{key}_over_{layouts[0]}"] = round(summary[layout][key] / first[key], 2)
    return summary


if __name__ == "__main__":
    sys.exit(main())
