"""Class labels as converters find them, made into class ids (-1: unlabelled) with errors that
name the file and the row."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from remotegnn.errors import ConvertError


def labels_from_values(values: np.ndarray, what: str, first_row: int = 0) -> np.ndarray:
    """Class ids from integer or float labels, NaN meaning unlabelled (-1); errors name the row,
    counted from ``first_row``."""
    values = np.asarray(values).ravel()
    if values.dtype.kind in "iu":
        ids = values.astype(np.int64)
    elif values.dtype.kind == "f":
        missing = np.isnan(values)
        bad = np.flatnonzero(~missing & ((values != np.round(values)) | ~np.isfinite(values)))
        if len(bad):
            raise ConvertError(f"{what} row {first_row + int(bad[0])}: label {values[bad[0]]} is not a class id")
        ids = np.where(missing, -1, values).astype(np.int64)
    else:
        raise ConvertError(f"{what} has dtype {values.dtype}; labels must be numbers")
    if len(ids) and (negative := np.flatnonzero(ids < -1)).size:
        raise ConvertError(
            f"{what} row {first_row + int(negative[0])}: label {int(ids[negative[0]])} is not a class id "
            "(ids are >= 0; -1 marks an unlabelled node)"
        )
    return ids


def class_ids(values: np.ndarray, what: str) -> tuple[np.ndarray, list[str]]:
    """Class ids and their names: integers are taken as ids (-1 = unlabelled), booleans as 0/1,
    anything else (strings such as MUSAE's page types) numbered in sorted order."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ConvertError(f"{what} has shape {list(values.shape)}; labels must be one class per node")
    if values.dtype.kind == "b":
        return values.astype(np.int64), ["False", "True"]
    if values.dtype.kind in "US":
        try:
            values = values.astype(np.int64)
        except ValueError:
            names, ids = np.unique(values, return_inverse=True)
            return ids.astype(np.int64), [str(n) for n in names]
    if values.dtype.kind not in "iu":
        raise ConvertError(
            f"{what} has dtype {values.dtype}; labels must be integer class ids (regression targets are not supported)"
        )
    ids = labels_from_values(values, what)
    num_classes = int(ids.max()) + 1 if len(ids) else 0
    return ids, [str(c) for c in range(num_classes)]


def describe_classes(classes: Sequence[str], limit: int = 20) -> str:
    """'classes a=0, b=1' for named classes (numbered by the converter); '' for integer ids."""
    if list(classes) == [str(i) for i in range(len(classes))]:
        return ""
    named = ", ".join(f"{c}={i}" for i, c in enumerate(classes[:limit]))
    return f"classes {named}" + (f", ... ({len(classes):,} in all)" if len(classes) > limit else "")
