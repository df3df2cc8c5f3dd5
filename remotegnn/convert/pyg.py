"""PyG ``Data`` to a dataset and back, exactly.

``from_pyg`` keeps the edges as given (``KEEP_AS_GIVEN``: order, self loops, duplicates, no
symmetrising) so ``to_pyg`` can rebuild the same ``edge_index`` from the stored original edge
ids; x keeps its dtype when the format holds it (float32, float16), y and the masks are stored
as they are. Attributes the format has no place for (edge_attr, pos, ...) are named in a
warning. On disk a PyG graph is a ``.pt`` file holding ``data.to_dict()``, a dict of tensors,
which loads with ``torch.load(weights_only=True)``: never a pickled ``Data`` object, since
unpickling can run arbitrary code.

This and ``pyg_hetero`` are the only converter modules that import torch (the ``[pyg]`` extra).
"""

from __future__ import annotations

import io
import os
import pickle
import re
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel
from torch_geometric.data import Data, HeteroData

from contracts.dataset import SPLITS
from foundation.errors import UsageError
from foundation.fileio import atomic_write_bytes
from remotegnn.convert._common import (
    ConvertResult,
    DenseFeatures,
    PolicyOverrides,
    constant_features,
    expect_rows,
    pick_split,
    require_file,
    resolve_policy,
    write_dataset,
)
from remotegnn.convert._labels import class_ids
from remotegnn.convert.pyg_hetero import from_pyg_hetero
from remotegnn.errors import ConvertError
from remotegnn.store import KEEP_AS_GIVEN, EdgePolicy, GraphDataset

SPLIT_SUFFIXES = ("mask", "idx", "index")


def from_pyg(
    data: Data,
    dst: str | os.PathLike[str],
    *,
    name: str = "pyg",
    split_index: int = 0,
    policy: EdgePolicy | PolicyOverrides | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
    source: str = "a PyG Data object",
    weight_attr: str | None = None,
) -> ConvertResult:
    """Store ``data``'s edge_index, x, y and train/val/test masks (or ``{split}_idx`` ids), and
    with ``weight_attr`` that edge attribute as the sampling weights (PyG's ``weight_attr``).
    A ``HeteroData`` keeps its node and edge types (``remotegnn.convert.pyg_hetero``).

    Args:
        data: A PyG ``Data`` or ``HeteroData``.
        dst: The dataset directory to create.
        name: The dataset's name in its meta.
        split_index: Which of several stored masks ([N, K] or [K, N]) makes each split.
        policy: What to do with self-loops and duplicate edges, and whether to store each edge
            both ways: an ``EdgePolicy``, or the fields to change of the default, which keeps
            the edges as given. A ``HeteroData`` is always stored as given.
        dtype: The feature dtype, float32 or float16; None keeps the source's when it is one of
            those, else float32.
        overwrite: Replace ``dst`` if it exists.
        source: What messages call the data.
        weight_attr: The edge attribute (one weight per edge) to store as sampling weights.
    """
    if isinstance(data, HeteroData):
        cleaned = policy is not None and resolve_policy(policy, KEEP_AS_GIVEN) != KEEP_AS_GIVEN
        if weight_attr is not None or cleaned or split_index:
            raise ConvertError(
                f"{source}: a heterogeneous graph is stored as given (no weights, policy or split index)"
            )
        return from_pyg_hetero(data, dst, name=name, dtype=dtype, overwrite=overwrite, source=source)
    store = dict(data.to_dict())
    edge_index = store.pop("edge_index", None)
    if not isinstance(edge_index, torch.Tensor):
        raise ConvertError(f"{source} has no edge_index tensor")
    if edge_index.dim() != 2 or edge_index.size(0) != 2 or edge_index.is_floating_point():
        raise ConvertError(
            f"{source}: edge_index is {edge_index.dtype} {list(edge_index.shape)}; expected integer [2, E]"
        )
    num_nodes = data.num_nodes
    store.pop("num_nodes", None)
    edge_weights = None
    if weight_attr is not None:
        weights = store.pop(weight_attr, None)
        if not isinstance(weights, torch.Tensor) or weights.shape != (edge_index.size(1),):
            raise ConvertError(
                f"{source}: weight_attr={weight_attr!r} must name a 1-D tensor with one weight per edge "
                f"({edge_index.size(1)}); the graph's attributes are {', '.join(sorted(data.keys()))}"
            )
        edge_weights = (weight_attr, _numpy(weights, weight_attr, source))
    if num_nodes is None:
        raise ConvertError(f"{source} has neither x nor num_nodes, so its node count is unknown")

    notes: list[str] = []
    x = store.pop("x", None)
    features = (
        DenseFeatures(_numpy(x, "x", source), f"{source} x")
        if x is not None
        else constant_features(num_nodes, notes, source)
    )
    y = store.pop("y", None)
    labels: np.ndarray | None = None
    classes: list[str] = []
    if y is not None:
        y = _numpy(y, "y", source)
        if y.ndim == 2 and y.shape[1] == 1:
            notes.append(f"{source}: y [N, 1] stored as [N]")
            y = y[:, 0]
        labels, classes = class_ids(y, f"{source} y")
        expect_rows(len(labels), num_nodes, f"{source} y")
    splits = {}
    for split in SPLITS:
        key = next((f"{split}_{s}" for s in SPLIT_SUFFIXES if f"{split}_{s}" in store), None)
        if key is not None:
            splits[split] = pick_split(_numpy(store.pop(key), key, source), num_nodes, split_index, f"{source} {key}")
    if store:
        notes.append(f"{source}: not carried over (the format has no place for them): {', '.join(sorted(store))}")
    return write_dataset(
        dst,
        name=name,
        edges=tuple(_numpy(edge_index, "edge_index", source)),
        num_nodes=num_nodes,
        policy=resolve_policy(policy, KEEP_AS_GIVEN),
        features=features,
        labels=labels,
        classes=classes,
        splits=splits,
        dtype=dtype,
        overwrite=overwrite,
        notes=notes,
        source=f"pyg {source}",
        edge_weights=edge_weights,
    )


def to_pyg(dataset: GraphDataset | str | os.PathLike[str]) -> Data:
    """The dataset as ``Data(x, edge_index, [y], [train/val/test_mask], [edge weights])``, edges in
    original order and nodes in the user's ids (a reordered dataset is put back in id order).

    Args:
        dataset: An open ``GraphDataset``, or a dataset directory.
    """
    if not isinstance(dataset, GraphDataset):
        dataset = GraphDataset.open(dataset)
    meta = dataset.meta
    positions = dataset.positions
    in_id_order = np.array if positions is None else lambda rows: np.asarray(rows)[positions]
    edge_index = dataset.edge_index()
    edge_index = dataset.to_user(edge_index.ravel()).reshape(edge_index.shape)
    data = Data(x=torch.from_numpy(in_id_order(dataset.features)), edge_index=torch.from_numpy(edge_index))
    if meta.num_classes:
        data.y = torch.from_numpy(in_id_order(dataset.labels))
    if meta.edge_weight is not None:
        weights = np.empty(meta.num_edges, dtype=np.float32)
        weights[np.asarray(dataset.csc.eid)] = dataset.edge_weights
        data[meta.edge_weight] = torch.from_numpy(weights)
    for split in meta.splits:
        mask = torch.zeros(meta.num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(dataset.user_split(split))] = True
        data[f"{split}_mask"] = mask
    return data


def load_pyg(path: str | os.PathLike[str]) -> Data | HeteroData:
    """A ``.pt`` file holding ``data.to_dict()`` (a ``Data`` or ``HeteroData``), loaded with
    ``weights_only=True``."""
    path = require_file(Path(path), "PyG file")
    try:
        raw = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        what = found.group(1) if found else "objects other than tensors"
        raise ConvertError(
            f"{path} holds {what}, which is not loaded (unpickling can run code); save the graph "
            "as a dict of tensors: torch.save(data.to_dict(), path)"
        ) from None
    except (RuntimeError, OSError, EOFError) as exc:
        raise ConvertError(f"{path} is not a readable torch file ({exc})") from None
    if not isinstance(raw, dict):
        raise ConvertError(
            f"{path} holds a {type(raw).__name__}; expected a dict of tensors, "
            "as torch.save(data.to_dict(), path) writes"
        )
    if any(isinstance(value, dict) for value in raw.values()):  # HeteroData.to_dict(): a dict per type
        return HeteroData.from_dict(raw)
    return Data.from_dict(raw)


class ExportResult(BaseModel):
    path: str
    num_nodes: int
    num_edges: int
    keys: list[str]
    bytes: int


def save_pyg(
    dataset: GraphDataset | str | os.PathLike[str], out: str | os.PathLike[str], *, overwrite: bool = False
) -> ExportResult:
    """Write ``to_pyg(dataset).to_dict()`` to ``out`` atomically (a temp file, then a rename)."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise UsageError(f"{out} already exists; pass --overwrite to replace it, or choose another path")
    data = to_pyg(dataset)
    buffer = io.BytesIO()
    torch.save(data.to_dict(), buffer)
    atomic_write_bytes(out, buffer.getvalue())
    return ExportResult(
        path=str(out),
        num_nodes=data.num_nodes,
        num_edges=data.num_edges,
        keys=sorted(data.keys()),
        bytes=out.stat().st_size,
    )


def _numpy(tensor, key: str, source: str) -> np.ndarray:
    if not isinstance(tensor, torch.Tensor):
        raise ConvertError(f"{source}: {key} is a {type(tensor).__name__}, expected a tensor")
    if tensor.dtype == torch.bfloat16:
        return tensor.float().numpy()
    return tensor.detach().cpu().numpy()
