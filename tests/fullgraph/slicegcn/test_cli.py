"""`fullgraph slice` and `fullgraph slicegcn train` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FULLGRAPH = [sys.executable, "-m", "fullgraph.cli.main"]


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([*FULLGRAPH, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_slice_then_train_on_the_slices_with_json(graph, tmp_path):
    sliced = run("slice", graph.path, tmp_path / "s", "--parts", "3", "--json")
    assert sliced.returncode == 0, sliced.stderr
    assert json.loads(sliced.stdout)["columns"] == [[0, 4], [4, 8], [6, 10]]
    trained = run(
        "slicegcn", "train", graph.path, "--parts", "3", "--slices", tmp_path / "s", "--epochs", "3",
        "--hidden", "12", "--layers", "2", "--encoding", "--json", "-o", tmp_path / "r.json",
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    result = json.loads(trained.stdout)
    assert result["variant"] == "SliceGCN-SE" and len(result["epochs"]) == 3 and len(result["traffic"]) == 4
    assert json.loads(Path(tmp_path / "r.json").read_text()) == result


def test_the_table_names_the_variant_and_each_ranks_bytes(graph):
    done = run("slicegcn", "train", graph.path, "--parts", "2", "--epochs", "2", "--hidden", "8", "--layers", "1")
    assert done.returncode == 0, done.stderr
    assert "SliceGCN, p = 2" in done.stdout and "learner" in done.stdout and "MB" in done.stdout


def test_over_udp_the_table_says_so_and_shows_the_datagrams(graph):
    args = ("--parts", "2", "--epochs", "2", "--hidden", "8", "--layers", "1", "--exchange", "udp", "--json")
    done = run("slicegcn", "train", graph.path, *args)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["exchange"] == "udp" and all(t["wire"]["datagrams_sent"] > 0 for t in result["traffic"])
    table = run("slicegcn", "train", graph.path, *args[:-1])
    assert "SliceGCN over udp, p = 2" in table.stdout and "the udp exchange, per rank" in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--parts", "11"], "at most 10"),
        (["--parts", "0"], "parts"),
        (["--exchange", "tcp"], "--exchange: Input should be 'mpi', 'udp' or 'pinch'"),
        (["--reference", "--mpi"], "--reference runs every slice in this process"),
        (["--hostfile", "hosts"], "--hostfile places the ranks of an MPI job: add --mpi"),
        (["--dropout", "1.5"], "dropout"),
    ],
)
def test_bad_requests_are_one_line_errors_with_exit_2(graph, args, message):
    done = run("slicegcn", "train", graph.path, "--epochs", "1", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_missing_dataset_is_named(tmp_path):
    done = run("slicegcn", "train", tmp_path / "nothing", "--epochs", "1")
    assert done.returncode != 0 and "nothing" in done.stderr and "Traceback" not in done.stderr
