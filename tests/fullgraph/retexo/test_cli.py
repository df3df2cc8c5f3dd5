"""`fullgraph partition` and `fullgraph retexo volume|train` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow  # each command starts a Python that imports torch


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "fullgraph"), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def parts(small, tmp_path_factory) -> Path:
    dst = tmp_path_factory.mktemp("cli") / "parts"
    done = run("partition", str(small.path), str(dst), "--parts", "2", "--method", "metis")
    assert done.returncode == 0, done.stderr
    assert "cut edges:" in done.stdout and "halo nodes (B)" in done.stdout
    return dst


def test_partition_json_is_the_partition_file(small, tmp_path):
    done = run("partition", str(small.path), str(tmp_path / "p"), "-n", "3", "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == json.loads((tmp_path / "p" / "partition.json").read_text())
    assert printed["parts"] == 3 and len(printed["quality"]) == 3


def test_volume_predicts_before_training(parts):
    done = run("retexo", "volume", str(parts), "--model", "sage", "--hidden", "16", "--rounds", "50", "--json")
    assert done.returncode == 0, done.stderr
    volume = json.loads(done.stdout)
    assert volume["inputs"]["rounds"] == 50 and volume["gamma"] > 1
    table = run("retexo", "volume", str(parts))
    assert "gamma =" in table.stdout and "RETEXO (lazy)" in table.stdout


def test_train_reports_accuracy_bytes_and_eq2(parts, tmp_path):
    out = tmp_path / "result.json"
    args = ("retexo", "train", str(parts), "--model", "gcn", "--hidden", "8", "--rounds", "3", "-o", str(out))
    done = run(*args, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result == json.loads(out.read_text())
    assert [s["stage"] for s in result["stages"]] == [1, 2] and result["measured_over_predicted"] == 1.0
    table = run(*args[:-2])
    assert "layer 2" in table.stdout and "representations" in table.stdout and "Eq. 2" in table.stdout


def train_table(*args: str, out: Path) -> tuple[str, dict]:
    """`fullgraph retexo train ARGS -o OUT`: its printed tables and the result it wrote (``--json``
    prints that same file, as test_train_reports_accuracy_bytes_and_eq2 checks), from one run."""
    done = run("retexo", "train", *args, "-o", str(out))
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(out.read_text())


def test_train_with_patience_reports_the_rounds_each_layer_ran(parts, tmp_path):
    args = (str(parts), "--hidden", "8", "--rounds", "30", "--patience", "1", "--lr", "1e-12")
    table, result = train_table(*args, out=tmp_path / "result.json")
    assert [len(s["rounds"]) for s in result["stages"]] == [2, 2]  # no improvement after round 0
    assert "patience 1" in table and "rounds" in table


def test_train_without_the_aggregate_cache_says_so_and_gets_the_same_rounds(parts, tmp_path):
    args = (str(parts), "--model", "sage", "--hidden", "8", "--rounds", "3")
    cached_table, cached = train_table(*args, out=tmp_path / "cached.json")
    plain_table, plain = train_table(*args, "--no-aggregate-cache", out=tmp_path / "plain.json")
    assert cached["config"]["aggregate_cache"] and not plain["config"]["aggregate_cache"]
    assert cached["stages"][0]["rounds"] == plain["stages"][0]["rounds"]
    assert "frozen aggregates cached" in cached_table
    assert "frozen aggregates cached" not in plain_table


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        (("retexo", "train", "{parts}", "--method", "bns"), "--method: Input should be 'standard' or 'retexo'", 2),
        (("retexo", "train", "{parts}", "--model", "gat", "--hidden", "10"), "multiple of heads", 2),
        (("retexo", "train", "{parts}", "--split", "dataset", "--val-fraction", "0.9"), "leave nodes for test", 2),
        (("retexo", "train", "{parts}", "--patience", "0"), "--patience", 2),
        (("partition", "{small}", "{tmp}/x", "--method", "kway"), "--method 'kway': use random or metis", 2),
        (("partition", "{small}", "{tmp}/x", "--parts", "0"), "--parts 0", 2),
        (("retexo", "volume", "{small}"), "not a partition directory", 1),  # a dataset error, as elsewhere
    ],
)
def test_bad_input_is_one_line_naming_the_option(parts, small, tmp_path, args, message, status):
    done = run(*(a.format(parts=parts, small=small.path, tmp=tmp_path) for a in args))
    assert done.returncode == status
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x").exists()


def test_train_over_udp_says_so_and_reports_the_datagrams(parts, tmp_path):
    args = (str(parts), "--hidden", "8", "--rounds", "2", "--exchange", "udp")
    table, result = train_table(*args, out=tmp_path / "result.json")
    assert result["exchange"] == "udp" and result["measured_over_predicted"] == 1.0
    assert all(t["wire"]["datagrams_sent"] > 0 for t in result["traffic"])
    assert "the udp exchange, per rank" in table and "master" in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--exchange", "bogus"), "--exchange: Input should be 'mpi', 'udp' or 'pinch'"),
        (("--exchange", "udp", "--port", "80"), "--port: Input should be greater than or equal to 1024"),
        (("--exchange", "udp", "--peer-timeout", "0"), "--peer-timeout: Input should be greater than 0"),
    ],
)
def test_a_bad_exchange_is_one_line_naming_the_option(parts, args, message):
    done = run("retexo", "train", str(parts), *args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
