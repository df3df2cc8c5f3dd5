"""Labels as converters find them become class ids, and a bad one is named by its row."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn.convert._labels import class_ids, describe_classes, labels_from_values
from remotegnn.errors import ConvertError


def test_integer_bool_and_named_labels_become_class_ids():
    ids, classes = class_ids(np.array([2, -1, 0]), "y")
    assert ids.tolist() == [2, -1, 0] and classes == ["0", "1", "2"]
    assert class_ids(np.array([True, False]), "y")[0].tolist() == [1, 0]
    ids, classes = class_ids(np.array(["tv", "company", "tv"]), "page_type")
    assert ids.tolist() == [1, 0, 1] and describe_classes(classes) == "classes company=0, tv=1"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.array([0, 4, -3]), r"y row 2: label -3 is not a class id \(ids are >= 0; -1 marks an unlabelled node\)"),
        (np.array([0.5, 1.0]), "dtype float64; labels must be integer class ids"),
        (np.zeros((2, 2), dtype=np.int64), r"shape \[2, 2\]; labels must be one class per node"),
    ],
)
def test_bad_class_labels_are_named(values, message):
    with pytest.raises(ConvertError, match=message):
        class_ids(values, "y")


def test_float_labels_with_nan_mean_unlabelled_and_rows_count_from_the_block():
    assert labels_from_values(np.array([[3.0], [np.nan]]), "node_label").tolist() == [3, -1]
    with pytest.raises(ConvertError, match="node_label row 11: label inf is not a class id"):
        labels_from_values(np.array([1.0, np.inf]), "node_label", first_row=10)
