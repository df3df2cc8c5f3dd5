"""`remotegnn convert` and `remotegnn export` as users run them: CliRunner for the options and exit
codes, one real process of the console script on a real dataset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from typer.testing import CliRunner

import remotegnn.cli.convert  # noqa: F401  (registers the commands)
from remotegnn.cli.app import app
from remotegnn.store import GraphDataset
from tests.remotegnn.convert.test_igb import make_igb
from tests.remotegnn.convert.test_mag240m import make_mag
from tests.remotegnn.convert.test_ogb import make_binary

REPO = Path(__file__).resolve().parents[3]


def run(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def edges_csv(tmp_path) -> Path:
    path = tmp_path / "e.csv"
    path.write_text("src,dst\n0,1\n1,2\n2,2\n0,1\n")
    return path


def test_edgelist_summary_and_json(tmp_path, edges_csv):
    result = run("convert", edges_csv, tmp_path / "ds")
    assert result.exit_code == 0, result.output
    assert "Converted e -> " in result.output and "nodes     3" in result.output
    assert "1 self loops and 1 duplicates dropped, 2 directed edges stored" in result.output
    assert "warning: " in result.output and "constant feature" in result.output
    result = run("convert", edges_csv, tmp_path / "ds2", "--undirected", "--self-loops", "keep", "--json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["meta"]["undirected"] and body["edges"] == {
        "given": 4,
        "self_loops_dropped": 0,
        "duplicates_dropped": 1,
        "stored": 5,
    }
    assert body["bytes"] > 0 and body["warnings"]


def small_graph(nodes: int = 20, edges: int = 80, seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    return Data(
        x=torch.randn(nodes, 4, generator=g),
        edge_index=torch.randint(0, nodes, (2, edges), generator=g),
        y=torch.randint(0, 3, (nodes,), generator=g),
        train_mask=torch.rand(nodes, generator=g) < 0.5,
    )


def test_pyg_convert_and_export_round_trip(tmp_path):
    data = small_graph()
    torch.save(data.to_dict(), tmp_path / "g.pt")
    result = run("convert", tmp_path / "g.pt", tmp_path / "ds", "--dtype", "float16")
    assert result.exit_code == 0, result.output
    assert "features  4 x float16" in result.output and "splits    train" in result.output
    result = run("export", tmp_path / "ds", tmp_path / "back.pt")
    assert result.exit_code == 0, result.output
    back = Data.from_dict(torch.load(tmp_path / "back.pt", weights_only=True))
    assert torch.equal(back.edge_index, data.edge_index) and torch.equal(back.x, data.x.half())
    assert torch.equal(back.y, data.y) and torch.equal(back.train_mask, data.train_mask)
    assert run("export", tmp_path / "ds", tmp_path / "back.pt").exit_code == 2
    assert run("export", tmp_path / "ds", tmp_path / "b.pt", "--format", "dgl").exit_code == 2
    assert run("export", tmp_path / "nothing", tmp_path / "c.pt").exit_code == 1


def test_pyg_convert_keeps_the_named_edge_weights(tmp_path):
    data = Data(x=torch.randn(5, 2), edge_index=torch.tensor([[1, 2, 3], [0, 0, 0]]), w=torch.tensor([1.0, 0.0, 2.0]))
    torch.save(data.to_dict(), tmp_path / "g.pt")
    result = run("convert", tmp_path / "g.pt", tmp_path / "ds", "--weight-attr", "w", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["meta"]["edge_weight"] == "w"
    result = run("convert", tmp_path / "g.pt", tmp_path / "ds2", "--weight-attr", "nope")
    assert result.exit_code != 0 and "weight_attr='nope'" in result.output
    assert not (tmp_path / "ds2").exists()
    result = run("convert", tmp_path / "g.pt", tmp_path / "ds3", "--format", "npz", "--weight-attr", "w")
    assert result.exit_code == 2 and "--weight-attr does not apply to --format npz (only pyg)" in result.output


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--format", "gml"], 2, "unknown format 'gml'"),
        (["--delimiter", ";", "--format", "npz"], 2, "--delimiter does not apply to --format npz (only edgelist)"),
        (["--self-loops", "remove"], 2, "--self-loops 'remove': use one of keep, drop, error"),
        (["--dtype", "float64"], 2, "--dtype 'float64' is not supported"),
        (["--split-ratios", "0.8,0.3,0.1"], 2, "--split-ratios '0.8,0.3,0.1': give three non-negative fractions"),
        (["--self-loops", "error"], 1, "edge 2 is a self loop on node 2"),
        (["--duplicates", "error"], 1, "edge (0, 1) appears more than once"),
    ],
)
def test_errors_are_one_line_with_the_right_exit_code(tmp_path, edges_csv, args, code, message):
    result = run("convert", edges_csv, tmp_path / "ds", *args)
    assert result.exit_code == code, result.output
    assert message in result.output and "Traceback" not in result.output
    assert result.output.count("error:") == 1
    assert not (tmp_path / "ds").exists()


def test_format_detection(tmp_path, edges_csv):
    (tmp_path / "g.gml").write_text("graph [ ]")
    (tmp_path / "empty").mkdir()
    result = run("convert", tmp_path / "g.gml", tmp_path / "ds")
    assert result.exit_code == 2 and "cannot tell the format" in result.output
    result = run("convert", tmp_path / "empty", tmp_path / "ds")
    found = "MUSAE (*_edges.csv) or PyG partition (META.json, part_0/) files found"
    assert result.exit_code == 2 and found in result.output
    result = run("convert", tmp_path / "missing.csv", tmp_path / "ds")
    assert result.exit_code == 1 and "missing.csv does not exist" in result.output
    assert run("convert", edges_csv, tmp_path / "ds").exit_code == 0
    result = run("convert", edges_csv, tmp_path / "ds")
    assert result.exit_code == 2 and "already exists; pass --overwrite" in result.output
    assert run("convert", edges_csv, tmp_path / "ds", "--overwrite", "--columns", "dst,src").exit_code == 0
    assert GraphDataset.open(tmp_path / "ds").edge_index().tolist() == [[1, 2], [0, 1]]


def test_real_datasets_through_the_cli(shared_datasets, tmp_path):
    result = run(
        "convert",
        shared_datasets / "twitch-DE",
        tmp_path / "tw",
        "--split-ratios",
        "none",
        "--dtype",
        "float16",
        "--json",
    )
    assert result.exit_code == 0, result.output
    meta = json.loads(result.stdout)["meta"]
    assert (meta["num_nodes"], meta["feature_dim"], meta["num_classes"]) == (9498, 3170, 2)
    assert GraphDataset.open(tmp_path / "tw").meta.splits == []
    result = run(
        "convert", shared_datasets / "tolokers" / "tolokers.npz", tmp_path / "tol", "--directed", "--split-index", "3"
    )
    assert result.exit_code == 0, result.output
    assert "519,000 directed edges stored" in result.output


def console_script() -> list[str]:
    script = REPO / ".venv" / "bin" / "remotegnn"
    return [str(script)] if script.exists() else [sys.executable, "-m", "remotegnn.cli.main"]


def test_console_script_converts_cora(shared_datasets, tmp_path):
    cmd = [*console_script(), "convert", str(shared_datasets / "planetoid"), str(tmp_path / "cora"), "--name", "cora"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "10,556 directed edges stored (undirected)" in proc.stdout
    assert "splits    train 140, val 500, test 1,000" in proc.stdout
    assert np.bincount(GraphDataset.open(tmp_path / "cora", verify=True).labels).tolist() == [
        351,
        217,
        418,
        818,
        426,
        298,
        180,
    ]
    proc = subprocess.run([*cmd, "--name", "pubmed"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: unknown Planetoid dataset 'pubmed'")


def test_pyg_convert_takes_a_heterogeneous_graph(tmp_path):
    from tests.remotegnn.test_hetero import graph

    torch.save(graph().to_dict(), tmp_path / "h.pt")
    result = run("convert", tmp_path / "h.pt", tmp_path / "ds", "--json")
    assert result.exit_code == 0, result.output
    hetero = json.loads(result.output)["meta"]["hetero"]
    assert [t["name"] for t in hetero["node_types"]] == ["paper", "author"] and len(hetero["edge_types"]) == 3
    result = run("convert", tmp_path / "h.pt", tmp_path / "ds2", "--duplicates", "drop")
    assert result.exit_code != 0 and "stored as given" in result.output and not (tmp_path / "ds2").exists()


def test_convert_with_an_order_stores_it_and_exports_the_users_graph(tmp_path):
    data = small_graph(nodes=50, edges=300, seed=1)
    torch.save(data.to_dict(), tmp_path / "g.pt")
    result = run("convert", tmp_path / "g.pt", tmp_path / "ds", "--order", "degree")
    assert result.exit_code == 0, result.output
    assert "order     degree" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "g.pt"]  # no staging directory left behind
    stored = GraphDataset.open(tmp_path / "ds")
    assert stored.meta.node_order == "degree" and (np.diff(stored.degree) <= 0).all()
    assert run("export", tmp_path / "ds", tmp_path / "back.pt").exit_code == 0
    back = Data.from_dict(torch.load(tmp_path / "back.pt", weights_only=True))
    for key in ("x", "edge_index", "y", "train_mask"):
        assert torch.equal(back[key], data[key]), key
    result = run("convert", tmp_path / "g.pt", tmp_path / "ds", "--order", "degree")
    assert result.exit_code == 2 and "already exists" in result.output
    result = run("convert", tmp_path / "g.pt", tmp_path / "other", "--order", "zorder")
    assert result.exit_code == 2 and "choose one of degree, dbg, bfs, rcm" in result.output
    assert not (tmp_path / "other").exists()


def test_published_layouts_are_recognised(tmp_path):
    make_binary(tmp_path / "ogb")
    make_igb(tmp_path / "igb")
    make_mag(tmp_path / "mag")
    for folder, fmt, nodes in (
        (tmp_path / "ogb" / "ogbn_papers100M", "OGB binary", 50),
        (tmp_path / "igb" / "small", "IGB small", 40),
        (tmp_path / "mag", "MAG240M", 55),
    ):
        result = run("convert", folder, tmp_path / f"out-{nodes}", "--json")
        assert result.exit_code == 0, result.output
        meta = json.loads(result.stdout)["meta"]
        assert meta["num_nodes"] == nodes and meta["source"].startswith(fmt)


@pytest.mark.parametrize(
    "fmt, args, message",
    [
        ("igb", ["--split-dir", "."], "--split-dir does not apply to --format igb"),
        ("ogb", ["--label-classes", "19"], "--label-classes does not apply to --format ogb"),
        ("mag240m", ["--undirected"], "do not apply to --format mag240m"),
    ],
)
def test_options_of_other_layouts_are_refused(tmp_path, fmt, args, message):
    result = run("convert", tmp_path, tmp_path / "ds", "--format", fmt, *args)
    assert result.exit_code == 2 and message in result.output


def test_every_format_an_option_is_for_has_a_converter():
    from remotegnn.cli.convert import CONVERTERS, FORMAT_OPTIONS

    assert set().union(*FORMAT_OPTIONS.values()) <= set(CONVERTERS)
