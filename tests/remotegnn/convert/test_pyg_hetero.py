"""HeteroData to a dataset: types in one id space, features padded, labels and masks per type."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from remotegnn.convert import ConvertWarning
from remotegnn.convert.pyg import from_pyg, load_pyg
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset
from tests.remotegnn.test_hetero import CITES, WRITES, graph


def test_types_get_consecutive_ids_and_their_own_columns(tmp_path):
    data = graph()
    result = from_pyg(data, tmp_path / "ds")
    meta = result.meta
    hetero = meta.hetero
    assert [(t.name, t.count, t.feature_dim, t.labelled) for t in hetero.node_types] == [
        ("paper", 60, 6, True),
        ("author", 25, 2, False),
    ]
    assert hetero.node_types[0].splits == ["train"] and hetero.node_types[1].splits == []
    assert [t.key for t in hetero.edge_types] == data.edge_types
    assert hetero.node_offsets == [0, 60, 85] and hetero.edge_offsets == [0, 300, 450, 600]
    dataset = GraphDataset.open(tmp_path / "ds", verify=True)
    features = np.asarray(dataset.features)
    assert features.shape == (85, 6)  # padded to the widest type
    np.testing.assert_array_equal(features[60:, :2], data["author"].x.numpy())
    assert (features[60:, 2:] == 0).all()
    labels = np.asarray(dataset.labels)
    np.testing.assert_array_equal(labels[:60], data["paper"].y.numpy())
    assert (labels[60:] == -1).all()
    np.testing.assert_array_equal(dataset.split("train"), data["paper"].train_mask.nonzero().view(-1).numpy())
    edges = dataset.edge_index()  # author ids are shifted by the papers before them
    np.testing.assert_array_equal(edges[:, 300:450], data[WRITES].edge_index.numpy() + np.array([[60], [0]]))


def test_a_pt_file_of_hetero_data_to_dict_loads_as_hetero_data(tmp_path):
    data = graph()
    torch.save(data.to_dict(), tmp_path / "g.pt")
    back = load_pyg(tmp_path / "g.pt")
    assert back.node_types == data.node_types and torch.equal(back[CITES].edge_index, data[CITES].edge_index)


def test_other_attributes_are_named_and_options_that_do_not_apply_refused(tmp_path):
    data = graph()
    data["author"].age = torch.rand(25)
    with pytest.warns(ConvertWarning, match="author: not carried over: age"):
        from_pyg(data, tmp_path / "ds")
    with pytest.raises(ConvertError, match="stored as given"):
        from_pyg(graph(), tmp_path / "ds2", weight_attr="w")
    assert not (tmp_path / "ds2").exists()
