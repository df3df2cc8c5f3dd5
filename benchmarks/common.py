"""What the benchmark scripts share: the machine block, the JSON output, the benchmark graphs,
children measured for time and memory, and page-cache eviction.

Imported as ``common`` (the scripts run as ``python benchmarks/NAME.py``, so this folder is on
sys.path).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from contracts.shards import DEFAULT_LAYOUT
from contracts.workload import DEFAULT_FANOUTS

FANOUTS_TEXT = ",".join(map(str, DEFAULT_FANOUTS))
"""The product's default fanouts, as a ``--fanouts`` argument is written (lists take
``list(DEFAULT_FANOUTS)``): the benchmarks measure what users get by default."""

DATA_DIR = Path(os.environ.get("MEMORYBRIDGE_BENCH_DATA", Path.home() / ".cache" / "memorybridge" / "bench"))


def machine(**extra) -> dict:
    """Where a figure was measured: keep this block with any figure you quote."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "platform": platform.platform(),
        "processor": _cpu_model() or platform.machine(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "numpy": np.__version__,
        **extra,
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def rmat_benchmark_graph(data_dir: Path = DATA_DIR, *, scale: int = 20, pairs: int = 12_000_000, dim: int = 128):
    """The sampler benchmark graph, made once and reused: R-MAT (Graph500 a=0.57,
    b=c=0.19, ids permuted), 2^20 nodes, 12M pairs stored both ways, 128 x float32 features."""
    from remotegnn.store import GraphDataset
    from remotegnn.synth import SynthSpec, synth

    path = Path(data_dir) / f"rmat{scale}-{pairs}-{dim}"
    if not (path / "meta.json").exists():
        synth(SynthSpec(nodes=1 << scale, edges=pairs, dim=dim, classes=16, seed=0), path, overwrite=True)
    return GraphDataset.open(path)


def reordered(dataset, order: str, data_dir: Path = DATA_DIR):
    """``dataset`` stored in ``order`` (``remotegnn reorder``), made once beside it under
    ``data_dir``, and what reordering it cost (kept in a JSON file beside it)."""
    from remotegnn.store import GraphDataset
    from remotegnn.store.reorder import reorder

    path = Path(data_dir) / f"{dataset.path.name}-{order}"
    cost_path = path.with_name(path.name + ".cost.json")
    if not (path / "meta.json").exists() or not cost_path.exists():
        result = reorder(dataset, path, order, overwrite=True)
        save(result.model_dump(include={"seconds", "order_seconds", "seconds_per_million_edges"}), cost_path)
    return GraphDataset.open(path), json.loads(cost_path.read_text())


SHARED_DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def real_datasets(data_dir: Path = DATA_DIR, shared: Path = SHARED_DATASETS) -> dict:
    """Every real graph in ../shared/datasets converted once to the RemoteGNN format, by name.

    Empty when ../shared is absent (the benchmark then says so instead of failing)."""
    from remotegnn.convert import from_musae, from_npz, from_planetoid
    from remotegnn.store import GraphDataset

    if not shared.is_dir():
        return {}
    sources = {
        "cora": lambda dst: from_planetoid(shared / "planetoid", dst, name="cora"),
        "citeseer": lambda dst: from_planetoid(shared / "planetoid", dst, name="citeseer"),
        "facebook": lambda dst: from_musae(shared / "musae-facebook", dst),
        "twitch-de": lambda dst: from_musae(shared / "twitch-DE", dst),
        "tolokers": lambda dst: from_npz(shared / "tolokers" / "tolokers.npz", dst),
    }
    out = {}
    for name, convert in sources.items():
        path = Path(data_dir) / "real" / name
        if not (path / "meta.json").exists():
            convert(path)
        out[name] = GraphDataset.open(path)
    return out


FEATURE_ROWS_PER_STEP = 1 << 14


def row_normalise(rows: np.ndarray) -> np.ndarray:
    """Rows divided by their sums (rows summing to 0 kept), as PyG's ``NormalizeFeatures``."""
    sums = rows.sum(axis=1, keepdims=True)
    return rows / np.where(sums == 0, 1, sums)


def with_features(dataset, path: Path, dim: int, transform, note: str):
    """A copy of ``dataset`` at ``path`` whose feature rows are ``transform(rows)`` (``dim``
    columns, float32): the same edges in the same order, labels and splits. Made once."""
    from remotegnn.store import KEEP_AS_GIVEN, DatasetWriter, GraphDataset

    meta = dataset.meta
    if not (path / "meta.json").exists():
        edges = dataset.edge_index()
        with DatasetWriter(path, name=path.name, overwrite=True) as writer:
            writer.write_graph(edges[0], edges[1], meta.num_nodes, KEEP_AS_GIVEN)  # stored as it is
            writer.undirected = meta.undirected  # already stored both ways: say so, as the source does
            out = writer.features(dim)
            for start in range(0, meta.num_nodes, FEATURE_ROWS_PER_STEP):
                rows = np.asarray(dataset.features[start : start + FEATURE_ROWS_PER_STEP], dtype=np.float32)
                out[start : start + len(rows)] = transform(rows)
            out.flush()
            del out
            writer.write_labels(np.asarray(dataset.labels), meta.num_classes)
            for split in meta.splits:
                writer.write_split(split, np.asarray(dataset.split(split)))
            writer.commit(source=f"{meta.source}; {note}")
    return GraphDataset.open(path)


def emit(report: dict, output: Path | None) -> int:
    """Print the report as JSON, and write it atomically to ``output`` when given; exit code 0."""
    sys.stdout.write(_json(report))
    if output:
        save(report, output)
    return 0


def save(report: dict, output: Path) -> None:
    """Write the report atomically without printing it (a long benchmark's progress so far)."""
    from foundation.fileio import atomic_write_text

    atomic_write_text(output, _json(report))


def _json(report: dict) -> str:
    import json

    return json.dumps(report, indent=2) + "\n"


@contextmanager
def job_output_to_stderr() -> Iterator[None]:
    """Send what child processes print to stderr for a while (a testbed job's learner prints its
    report), so a benchmark's stdout holds its own JSON document alone."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


# The calibration job's graph (fidelity.py, flow_cap.py): 64 Ki nodes x 1024 float32 (4 KiB rows,
# one page each, 268 MB of features); 20% train seeds.
CALIBRATION_GRAPH = dict(nodes=65536, edges=524288, dim=1024, classes=8, seed=0, train=0.2)
CALIBRATION_BATCH_SIZE, CALIBRATION_HIDDEN = 256, 16


def calibration_graph(workdir: Path, fanouts: Iterable[str]) -> tuple[Path, Path, int]:
    """The calibration job's synthetic graph (made once in ``workdir``), its profile with a
    measured batch shape for each of ``fanouts`` ("10,5", ...; remade when one is missing), and
    its feature bytes."""
    import subprocess

    from contracts.profile import load_profile
    from remotegnn.store import GraphDataset
    from remotegnn.synth import SynthSpec, synth

    path, profile = workdir / "graph", workdir / "profile.json"
    if not (path / "meta.json").exists():
        synth(SynthSpec(**CALIBRATION_GRAPH), path, overwrite=True, progress=False)
    wanted = sorted(set(fanouts))
    if not profile.exists() or not all(
        load_profile(profile).measured_batch([int(f) for f in text.split(",")], CALIBRATION_BATCH_SIZE)
        for text in wanted
    ):
        shapes = [arg for f in wanted for arg in ("--shape-fanouts", f)]
        subprocess.run(
            [
                str(Path(sys.executable).parent / "remotegnn"),
                "profile",
                str(path),
                "--fanout",
                "10,5",
                *shapes,
                "--batch-size",
                str(CALIBRATION_BATCH_SIZE),
                "-o",
                str(profile),
            ],
            check=True,
            capture_output=True,
        )
    meta = GraphDataset.open(path).meta
    return path, profile, meta.num_nodes * meta.feature_dim * 4


def fidelity_job_argv(
    dataset: Path,
    profile: Path,
    *,
    fanouts: str,
    batch_size: int,
    hidden: int,
    epochs: int,
    cache_bytes: int,
    learner_cache_bytes: int | str,
    wire_dtype: str = "float32",
    flows: int = 1,
    layout: str = DEFAULT_LAYOUT,
) -> list[str]:
    """The command that runs benchmarks/fidelity_job.py (a calibration job) on a testbed whose memory
    ranks serve ``layout`` (the job records it for calibration)."""
    options = {
        "--dataset": dataset,
        "--profile": profile,
        "--fanouts": fanouts,
        "--batch-size": batch_size,
        "--hidden": hidden,
        "--epochs": epochs,
        "--cache-bytes": cache_bytes,
        "--learner-cache-bytes": learner_cache_bytes,
        "--wire-dtype": wire_dtype,
        "--flows": flows,
        "--layout": layout,
    }
    return [sys.executable, str(Path(__file__).with_name("fidelity_job.py"))] + [
        str(item) for pair in options.items() for item in pair
    ]


def evict(path: Path) -> None:
    """Drop ``path``'s pages from the page cache (only this file's: other work keeps its cache).

    ``path`` may be a block device (a loop device's cached pages), which
    ``testbed.volume.evict`` (files and folders) does not take."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under ``folder``: a dataset's or an input layout's size."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


RSS_POLL_S = 0.05  # how often a measured child's high-water mark is read


def status_mib(pid: int | str, field: str = "VmHWM") -> float | None:
    """A /proc status field of a live process in MiB (VmHWM: its peak resident set since its
    exec; RssAnon: the anonymous memory it holds now), or None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def run_measured(argv: list, cwd: Path | None = None, check: bool = True, timeout_s: float | None = None) -> dict:
    """Run a child to its end: seconds, its peak RSS, exit code, stdout and stderr's tail.

    The peak is the child's VmHWM, read until it exits (wait4's ru_maxrss would not do: Linux
    carries the forking parent's peak into it, so a child of a large benchmark looks as large).
    ``peak_anon_mib`` is the most anonymous memory seen: what the child holds, where the peak
    also counts the page cache's pages of files it maps. Growth in the last read interval is
    missed. Both pipes are drained as the child runs. A child still running after ``timeout_s``
    is killed (``timed_out`` says so)."""
    import subprocess
    import threading
    import time

    started = time.perf_counter()
    process = subprocess.Popen(list(map(str, argv)), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    streams: dict[str, str] = {}

    def drain(name: str, pipe) -> None:
        streams[name] = pipe.read()

    readers = [
        threading.Thread(target=drain, args=item) for item in (("stdout", process.stdout), ("stderr", process.stderr))
    ]
    for reader in readers:
        reader.start()
    peak, anon, timed_out = 0.0, 0.0, False
    while True:
        peak = max(peak, status_mib(process.pid, "VmHWM") or 0.0)
        anon = max(anon, status_mib(process.pid, "RssAnon") or 0.0)
        if timeout_s is not None and time.perf_counter() - started > timeout_s:
            process.kill()
            timed_out = True
        try:
            process.wait(timeout=RSS_POLL_S)
            break
        except subprocess.TimeoutExpired:
            continue  # the poll interval: read the high-water mark again
    for reader in readers:
        reader.join()
    if check and process.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} exited with {process.returncode}: {streams['stderr'][-2000:]}")
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "peak_rss_mib": round(peak, 1),
        "peak_anon_mib": round(anon, 1),
        "exit": process.returncode,
        "timed_out": timed_out,
        "stdout": streams["stdout"],
        "stderr": streams["stderr"][-2000:],
    }


def testbed_unsupported() -> str | None:
    """Why a testbed cannot run here (root, network namespaces, MPI), or None when it can."""
    from testbed import system

    support = system.detect()
    missing = [
        f"{n}: {c.reason}"
        for n, c in (("root", support.root), ("network", support.network), ("mpi", support.mpi))
        if not c.available
    ]
    return "; ".join(missing) or None


@contextmanager
def scratch(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A fresh temporary folder under ``parent`` (default: the system's), removed afterwards
    whatever happens: where a benchmark writes the inputs and outputs it measures."""
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
