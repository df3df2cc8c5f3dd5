"""A directory written by PyG's own Partitioner (torch_geometric.distributed), with the labels and
splits PyG's partition example saves beside it, converts back to the graph that was partitioned:
the same edges in the same order, the same rows, labels and splits.

The Partitioner asks METIS (pyg-lib or torch-sparse) which partition each node goes to. Where
neither has METIS (this project's CPU build of torch-sparse has none), that one answer is given
instead: contiguous ranges of node ids, as ``ClusterData._metis`` would return them; everything
the Partitioner writes is still PyG's own code."""

from __future__ import annotations

import json

import pytest
import torch

from remotegnn.convert.pyg import to_pyg
from remotegnn.store import GraphDataset
from tests.remotegnn.convert.test_cli import run

NODES, EDGES, PARTS = 600, 4000, 3


@pytest.fixture
def partitioned(tmp_path, monkeypatch):
    """PyG's Partitioner run on a random graph, and the labels and splits beside it as PyG's
    example partition_graph.py saves them."""
    import torch_geometric.typing
    from torch_geometric.data import Data
    from torch_geometric.distributed import Partitioner
    from torch_geometric.loader.cluster import ClusterData

    if not torch_geometric.typing.WITH_METIS:  # no METIS here: contiguous ranges of node ids
        monkeypatch.setattr(ClusterData, "_metis", lambda self, _, n: torch.arange(n) * self.num_parts // n)

    generator = torch.Generator().manual_seed(7)
    edge_index = torch.randint(0, NODES, (2, EDGES), generator=generator)
    data = Data(
        x=torch.randn(NODES, 8, generator=generator),
        edge_index=edge_index,
        y=torch.randint(0, 5, (NODES,), generator=generator),
        num_nodes=NODES,
    )
    root = tmp_path / "demo-partitions"
    Partitioner(data, PARTS, str(root)).generate_partition()
    (tmp_path / "demo-label").mkdir()
    torch.save(data.y, tmp_path / "demo-label" / "label.pt")
    node_map = torch.load(root / "node_map.pt", weights_only=True)
    splits = {"train": torch.arange(0, 400), "test": torch.arange(450, NODES)}
    for split, ids in splits.items():
        folder = tmp_path / f"demo-{split}-partitions"
        folder.mkdir()
        for part in range(PARTS):
            torch.save(ids[node_map[ids] == part], folder / f"partition{part}.pt")
    return data, root, splits


def test_pyg_partitions_convert_back_to_the_graph_that_was_partitioned(partitioned, tmp_path):
    data, root, splits = partitioned
    done = run("convert", root, tmp_path / "demo", "--json")  # the format told from the directory
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["meta"]["name"] == "demo"
    back = to_pyg(GraphDataset.open(tmp_path / "demo"))
    assert torch.equal(back.edge_index, data.edge_index)  # every edge, in its original order
    assert torch.equal(back.x, data.x) and torch.equal(back.y, data.y)
    for split, ids in splits.items():
        assert torch.equal(torch.nonzero(back[f"{split}_mask"]).flatten(), ids)


def test_a_partition_missing_is_named(partitioned, tmp_path):
    _, root, _ = partitioned
    (root / "part_1" / "graph.pt").unlink()
    done = run("convert", root, tmp_path / "demo", "--format", "pyg-partition")
    assert done.exit_code != 0 and "part_1/graph.pt is missing" in done.output


def test_a_file_that_would_run_code_is_refused_unrun(partitioned, tmp_path, monkeypatch):
    import pickle

    class RunsCode:
        def __reduce__(self):
            return (exec, ("import pathlib; pathlib.Path('ran').write_text('yes')",))

    _, root, _ = partitioned
    monkeypatch.chdir(tmp_path)
    (root / "part_0" / "node_feats.pt").write_bytes(pickle.dumps(RunsCode()))
    done = run("convert", root, tmp_path / "demo")
    assert done.exit_code != 0 and "cannot be read as plain tensors" in done.output
    assert not (tmp_path / "ran").exists()
