"""PyG training scripts run unchanged: each script in pyg_scripts/ runs once with PyG's own loader
and once with only its import line changed to ours (DistributedGraphLoader, DistributedLinkLoader),
over several seeds; the batches must have the same structure and the mean test accuracies must
agree: within 1 point, or within what chance allows two means of that many runs (Welch's test,
failing by chance alone 1% of the time) where that is wider, but never more than 2.5 points apart.

The runs are short, and there are more of them where a run is noisy. The test compares loaders, not
final accuracies, so each script trains only until its test accuracy has mostly risen. Measured
test accuracies (points, mean and standard deviation over seeds, PyG's loader / ours):

- link prediction, 10 epochs: 74.0 +- 1.3 / 73.9 +- 1.6 (8 seeds); 3 epochs: 70.1 +- 1.8 (16) /
  69.9 +- 1.3 (10), against 50 for a guess. Most of a run's noise is the luck of its 1,054 test
  edges, so shorter runs are only somewhat noisier: 3 epochs and 10 seeds.
- node classification, 30 epochs: 79.6 +- 0.7 / 79.5 +- 0.8; 15 epochs: 79.8 +- 0.7 / 80.4 +- 0.8
  (8 seeds): 15 epochs and 8 seeds.
- heterogeneous node classification, 50 epochs: 66.5 +- 0.9 / 67.3 +- 1.2; 20 epochs: 65.7 +- 0.9 /
  65.5 +- 1.7 (6 seeds): 20 epochs and 12 seeds.

Pairing the seeds (same seed, same split, a test on the per-seed differences) was measured and
rejected: PyG's and our accuracies for a seed are uncorrelated (-0.1 to -0.2 for link and node
classification, no consistent sign for the heterogeneous script), so pairing would only cost degrees
of freedom. The earlier design (10, 30 and 50 epochs, 8 seeds, a bound of 2.6 standard errors) spent
2.2 times the training time, and its fixed 2.6 was too tight for standard errors estimated from 8+8
runs: simulated with the deviations above, it failed link prediction by chance alone 2.1% of the
time (heterogeneous node classification 1.9%), where Welch's quantile (about 2.9) holds 1%.
Simulated with those deviations, a true gap of 3 points fails link prediction 91% of the time and
2.5 points 75% (the earlier design: 92% and 78%, at twice the chance failures); a gap of 2.5 points
fails heterogeneous node classification 93% of the time (earlier 97%) and 2 points node
classification 99% (earlier 99%).

PyG's own sampling needs torch-sparse or pyg-lib, which PyPI lacks for this platform: the test
set-up installs CPU builds of torch-sparse when they sit beside the checkout (tests/pyg_samplers.py),
and without them these tests skip with that reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from scipy import stats

from tests.pyg_samplers import with_pyg_samplers

SCRIPTS = Path(__file__).with_name("pyg_scripts")
RUNNER = Path(__file__).with_name("pyg_runner.py")
IMPORTS = {  # script -> (PyG's import line, the line that replaces it)
    "sage_node_classification.py": (
        "from torch_geometric.loader import NeighborLoader",
        "from remotegnn.loader import DistributedGraphLoader as NeighborLoader",
    ),
    "sage_link_prediction.py": (
        "from torch_geometric.loader import LinkNeighborLoader",
        "from remotegnn.link_loader import DistributedLinkLoader as LinkNeighborLoader",
    ),
    "hetero_node_classification.py": (
        "from torch_geometric.loader import NeighborLoader",
        "from remotegnn.loader import DistributedGraphLoader as NeighborLoader",
    ),
}
PARALLEL_RUNS = 2
"""Script runs at a time (runners): PyG's and ours side by side, one core each on a two-core machine."""
SCRIPT_ENV = {"OMP_NUM_THREADS": "1"}
"""Each run's torch on one thread: two runs with a thread per core each oversubscribe the cores,
and torch's spinning threads then made a pair of link-prediction runs take 73 s instead of 19 s."""
SEEDS = {  # script -> its seeds: more where a run's test accuracy is noisier (see above)
    "sage_node_classification.py": range(8),
    "sage_link_prediction.py": range(10),
    "hetero_node_classification.py": range(12),
}
ACCURACY_POINTS = 1.0
CHANCE_FAILURES = 0.01
"""How often equal loaders break the noise bound by chance alone (two-sided)."""
HARD_LIMIT_POINTS = 2.5
"""However noisy the runs, means further apart than this fail."""
SCRIPT_TIMEOUT_S = 300
PER_HOP_COUNTS = ("num_sampled_nodes", "num_sampled_edges")
"""Batch fields PyG sets only when pyg-lib samples (torch-sparse does not return them); ours has them."""
EDGE_IDS = "e_id"
"""PyG's batches always carry edge ids; ours only when the loader asks (``edge_ids=True``) or needs
them (edge attributes, bidirectional, heterogeneous), since they are a third of an int64 batch's
bytes on the wire."""


def chance_gap(a: list[float], b: list[float]) -> float:
    """The gap between the means of ``a`` and ``b`` that runs of equal loaders exceed by chance alone
    ``CHANCE_FAILURES`` of the time: Welch's t quantile (its degrees of freedom from the runs'
    variances) times the standard error of the difference. A fixed multiple of the standard error
    would fail more often, as the variances are themselves estimated from a few runs."""
    shares = [statistics.variance(points) / len(points) for points in (a, b)]
    if not sum(shares):
        return 0.0
    freedom = sum(shares) ** 2 / sum(share**2 / (len(points) - 1) for share, points in zip(shares, (a, b), strict=True))
    return float(stats.t.ppf(1 - CHANCE_FAILURES / 2, freedom)) * sum(shares) ** 0.5


def comparable(keys: list[str]) -> set[str]:
    """A batch's field names (``type.field`` on a heterogeneous batch) but the per-hop counts and
    the edge ids."""
    return {key for key in keys if not key.endswith((*PER_HOP_COUNTS, EDGE_IDS))}


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("torch_sparse") is None,
        reason="PyG's own NeighborLoader needs torch-sparse or pyg-lib (bash scripts/setup.sh test "
        "installs CPU builds of torch-sparse from the shared wheels folder when it exists)",
    ),
]


@pytest.fixture(scope="module")
def planetoid_root(shared_datasets, tmp_path_factory) -> Path:
    """A root where PyG's Planetoid('Cora') finds its raw files and so never downloads."""
    root = tmp_path_factory.mktemp("planetoid")
    raw = root / "Cora" / "raw"
    raw.mkdir(parents=True)
    for path in (shared_datasets / "planetoid").glob("ind.cora.*"):
        shutil.copy(path, raw / path.name)
    from torch_geometric.datasets import Planetoid

    Planetoid(str(root), "Cora")  # processed once here, so runs side by side only read it
    return root


class Runner:
    """A process that runs scripts one at a time, each in a forked child of it (pyg_runner.py):
    torch and PyG are imported once per runner, not once per run."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(RUNNER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=with_pyg_samplers({**os.environ, **SCRIPT_ENV}),
        )

    def run(self, script: Path, root: Path, seed: int, out_dir: Path) -> dict:
        out_dir.mkdir(exist_ok=True)  # two runs may race here: both succeed
        out = out_dir / f"{script.stem}-{seed}.json"
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"script": str(script), "args": [str(root), str(seed), str(out)]}) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], SCRIPT_TIMEOUT_S)
        assert ready, f"{script.name} seed {seed} ran past {SCRIPT_TIMEOUT_S} s"
        assert json.loads(self.process.stdout.readline()) == {"exit": 0}, f"{script.name} seed {seed} failed"
        return json.loads(out.read_text())

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=SCRIPT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def runners():
    started = [Runner() for _ in range(PARALLEL_RUNS)]
    yield started
    for runner in started:
        runner.close()


def run_all(runners: list[Runner], jobs: list[tuple[Path, Path, int, Path]]) -> list[dict]:
    """``runner.run(*job)`` for every job, the runners side by side; results in the jobs' order."""
    results: list[dict] = [{}] * len(jobs)

    def work(which: int) -> None:
        for index in range(which, len(jobs), len(runners)):
            results[index] = runners[which].run(*jobs[index])

    with ThreadPoolExecutor(len(runners)) as pool:
        for done in [pool.submit(work, i) for i in range(len(runners))]:
            done.result()
    return results


def with_our_import(script: Path, out_dir: Path) -> Path:
    """The script with only its loader import changed."""
    theirs, ours = IMPORTS[script.name]
    text = script.read_text()
    assert text.count(theirs) == 1
    changed = out_dir / script.name
    changed.write_text(text.replace(theirs, ours))
    return changed


@pytest.mark.parametrize("name", sorted(IMPORTS))
def test_pyg_script_runs_unchanged_with_only_the_import_changed(name, planetoid_root, runners, tmp_path):
    script = SCRIPTS / name
    ours = with_our_import(script, tmp_path)
    seeds = SEEDS[name]
    jobs = [(s, planetoid_root, seed, tmp_path / out) for s, out in ((script, "pyg"), (ours, "ours")) for seed in seeds]
    results = run_all(runners, jobs)
    theirs, mine = results[: len(seeds)], results[len(seeds) :]
    for a, b in zip(theirs, mine, strict=True):
        assert a["tested"] == b["tested"]
        structure_a, structure_b = a["batch"], b["batch"]
        assert comparable(structure_a.pop("keys")) == comparable(structure_b.pop("keys"))
        assert structure_a == structure_b
    points = {name: [100 * r["test_acc"] for r in runs] for name, runs in (("pyg", theirs), ("ours", mine))}
    gap = abs(statistics.fmean(points["ours"]) - statistics.fmean(points["pyg"]))
    noise = chance_gap(points["pyg"], points["ours"])
    allowed = min(HARD_LIMIT_POINTS, max(ACCURACY_POINTS, noise))
    assert gap <= allowed, {"points": points, "gap": gap, "chance_gap": noise}
