"""The `remotegnn` console script end to end: synth -> info -> profile -> planner recommend."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.profile import load_profile

BIN = Path(sys.executable).parent


def run(*args: str, tool: str = "remotegnn") -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "g"
    done = run("synth", str(path), "--nodes", "5000", "--edges", "40000", "--dim", "8", "--classes", "3", "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert "5,000 nodes" in done.stdout
    return path


def test_info_verifies_and_prints_meta(synthetic):
    done = run("info", str(synthetic), "--verify", "--json")
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)
    assert meta["kind"] == "remotegnn.dataset" and meta["num_nodes"] == 5000
    table = run("info", str(synthetic))
    assert "train 500" in table.stdout and "not checked" in table.stdout


def test_profile_feeds_the_planner(synthetic, tmp_path):
    profile_path, plot = tmp_path / "profile.json", tmp_path / "hits.png"
    done = run(
        "profile",
        str(synthetic),
        "--fanout",
        "5,5",
        "--batch-size",
        "128",
        "-o",
        str(profile_path),
        "--plot",
        str(plot),
        "--shape-fanouts",
        "3",
        "--shape-fanouts",
        "5,5",
    )
    assert done.returncode == 0, done.stderr
    assert "top 1%" in done.stdout and "presample" in done.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    profile = load_profile(profile_path)
    assert profile.num_nodes == 5000 and profile.num_train == 500
    assert set(profile.cache_curves) == {"degree", "presample"}
    # One shape per distinct fanout, over full batches of 128 seeds (500 seeds: 3 full batches).
    assert [(m.fanouts, m.batch_size, m.batches) for m in profile.batch_shapes] == [([5, 5], 128, 3), ([3], 128, 3)]
    assert profile.batch_shapes[0].nodes_per_hop[0] == 128 and profile.measured_batch([3], 128) is not None
    assert sum(profile.in_degree.counts) == 5000
    plan = run("recommend", "--dataset-file", str(profile_path), "--budget", "10", "--json", tool="planner")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["profile"]["name"] == "g"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["synth", "{tmp}/x", "--nodes", "1"], "--nodes"),
        (["synth", "{tmp}/x", "--train", "0.9", "--test", "0.5"], "fractions"),
        (["info", "{tmp}/missing"], "not a dataset directory"),
        (["profile", "{tmp}/missing"], "not a dataset directory"),
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing(tmp_path, args, message):
    done = run(*(a.format(tmp=tmp_path) for a in args))
    assert done.returncode != 0
    assert message in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_profile_without_the_split_names_it(synthetic):
    done = run("profile", str(synthetic), "--split", "holdout")
    assert done.returncode == 1 and "no 'holdout' split" in done.stderr
