"""A batch's structure in the compact wire encoding, and back to the int64 tensors PyG's batch holds.

Once the learner caches most feature rows, ids and edges are most of what crosses the link: as
int64 a sampled node costs 16 bytes (``n_id`` and its label) and an edge 24 (``edge_index`` and
``e_id``). Frames carry them instead in the narrowest exact integers (the widths and why live in
:mod:`contracts.wirebytes`, which the planner prices from):

- ``n_id`` (and ``input_id``) as positions of the graph's width (int32 below 2**31 nodes);
- ``src``: each edge's source as an index into the batch (uint16 for batches of at most 65,536
  nodes);
- ``dst_count``: per destination, in ``n_id`` order, how many edges end there (the sampler emits
  edges grouped by destination and the destinations in ``n_id`` order, so this run-length code
  is exact); a batch whose destinations are not sorted sends ``dst`` as local indices instead;
- ``e_id`` only when the loader needs edge ids, at the graph's width;
- ``y`` in the narrowest signed type that holds the batch's labels.

``expand`` checks every count and index before it widens them (a forged frame must not index out
of the batch on the learner, where a CUDA kernel would fault on it) and raises ``FrameError``
naming the tensor and the reason.
"""

from __future__ import annotations

import numpy as np

from contracts.wirebytes import count_dtype, local_index_dtype, position_dtype, signed_dtype
from remotegnn import wire

I64 = np.dtype(np.int64)
HOP_COUNTS = ("num_sampled_nodes", "num_sampled_edges")
STRUCTURE = ("n_id", "src", "dst_count", "dst", "e_id", "input_id", *HOP_COUNTS)
"""Every tensor a compact structure may hold (``dst_count`` or ``dst``, ``e_id`` when asked)."""


def worst_specs(nodes: int, edges: int, seeds: int, hops: int, edge_ids: bool) -> list[wire.TensorSpec]:
    """The largest structure a batch of at most ``nodes`` and ``edges`` can encode to: what a
    frame slot must hold (tmpfs backs only the pages written, so the worst case costs no RAM)."""
    specs = [
        wire.TensorSpec("n_id", I64, (nodes,)),
        wire.TensorSpec("src", I64, (edges,)),
        wire.TensorSpec("dst", I64, (edges,)),  # never smaller than dst_count: one per node at most
        wire.TensorSpec("input_id", I64, (seeds,)),
        wire.TensorSpec("num_sampled_nodes", I64, (hops + 1,)),
        wire.TensorSpec("num_sampled_edges", I64, (hops,)),
    ]
    return specs + [wire.TensorSpec("e_id", I64, (edges,))] if edge_ids else specs


def encode(
    n_id: np.ndarray,
    edge_index: np.ndarray,
    e_id: np.ndarray | None,
    input_id: np.ndarray | None,
    hop_nodes: np.ndarray,
    hop_edges: np.ndarray,
    *,
    num_nodes: int,
    num_edges: int,
) -> dict[str, tuple[np.dtype, np.ndarray]]:
    """Each compact tensor's wire dtype and its values (cast as they are copied into the frame).

    ``e_id`` None: the loader does not need edge ids, so none are sent; ``input_id`` None: the
    caller does not track seeds' input ids (the PyG store's sampler)."""
    dst = edge_index[1]
    parts: dict[str, tuple[np.dtype, np.ndarray]] = {
        "n_id": (position_dtype(num_nodes), n_id),
        "src": (local_index_dtype(len(n_id)), edge_index[0]),
    }
    if len(dst) < 2 or bool((dst[1:] >= dst[:-1]).all()):
        counts = np.bincount(dst, minlength=0) if len(dst) else np.empty(0, dtype=I64)
        parts["dst_count"] = (count_dtype(int(counts.max()) if len(counts) else 0), counts)
    else:
        parts["dst"] = (local_index_dtype(len(n_id)), dst)
    if e_id is not None:
        parts["e_id"] = (position_dtype(num_edges), e_id)
    if input_id is not None:
        parts["input_id"] = (position_dtype(int(input_id.max()) + 1 if len(input_id) else 0), input_id)
    parts["num_sampled_nodes"], parts["num_sampled_edges"] = (I64, hop_nodes), (I64, hop_edges)
    return parts


def arrays(parts: dict[str, tuple[np.dtype, np.ndarray]]) -> dict[str, np.ndarray]:
    """The parts as arrays of their wire dtypes (for writers that copy whole arrays)."""
    return {name: values.astype(dtype, copy=False) for name, (dtype, values) in parts.items()}


def specs_of(parts: dict[str, tuple[np.dtype, np.ndarray]]) -> list[wire.TensorSpec]:
    return [wire.TensorSpec(name, dtype, tuple(values.shape)) for name, (dtype, values) in parts.items()]


def fill(views: dict[str, np.ndarray], parts: dict[str, tuple[np.dtype, np.ndarray]]) -> None:
    """Copy (and narrow) each part into its view of the frame."""
    for name, (_, values) in parts.items():
        views[name][...] = values


def label_dtype(y: np.ndarray) -> np.dtype:
    """The narrowest exact dtype for a batch's labels (class ids; other dtypes travel as stored)."""
    if y.dtype.kind not in "iu" or len(y) == 0:
        return y.dtype
    return signed_dtype(int(y.min()), int(y.max()))


def _fail(name: str, reason: str) -> wire.FrameError:
    return wire.FrameError(f"batch frame tensor {name!r}: {reason}")


def _indices(frame: wire.Frame, name: str, limit: int, length: int | None = None) -> np.ndarray:
    """``name`` as int64, checked to be 1-D integers in [0, limit) (of ``length`` when given)."""
    values = frame.tensors[name]
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise _fail(name, f"expected a 1-D integer tensor, got {values.dtype}{list(values.shape)}")
    if length is not None and len(values) != length:
        raise _fail(name, f"holds {len(values)} values where the batch has {length}")
    if len(values) and (int(values.min()) < 0 or int(values.max()) >= limit):
        raise _fail(name, f"values in [{int(values.min())}, {int(values.max())}] fall outside [0, {limit})")
    return values.astype(I64)


def expand(frame: wire.Frame, num_nodes: int | None = None) -> wire.Frame:
    """The frame with PyG's int64 structure (``n_id``, ``edge_index``, ``e_id`` when sent,
    ``input_id``, ``y``) in place of the compact tensors; other tensors (``x``) unchanged.

    ``num_nodes``: the graph's node count, when the caller knows it, bounds ``n_id``."""
    tensors = dict(frame.tensors)
    missing = [name for name in ("n_id", "src", *HOP_COUNTS) if name not in tensors]
    if missing or ("dst_count" in tensors) == ("dst" in tensors):
        raise wire.FrameError(
            f"batch frame lacks {', '.join(missing) or 'one of dst_count and dst'}: not a compact batch frame"
        )
    n_id = _indices(frame, "n_id", np.iinfo(np.int64).max if num_nodes is None else num_nodes)
    nodes = len(n_id)
    src = _indices(frame, "src", nodes)
    if "dst" in tensors:
        dst = _indices(frame, "dst", nodes, len(src))
    else:
        counts = _indices(frame, "dst_count", np.iinfo(np.int64).max)
        if len(counts) > nodes or int(counts.sum()) != len(src):
            raise _fail(
                "dst_count",
                f"{len(counts)} destinations with {int(counts.sum())} edges do not fit a batch of "
                f"{nodes} nodes and {len(src)} edges",
            )
        dst = np.repeat(np.arange(len(counts), dtype=I64), counts)
    for name in HOP_COUNTS:
        if int(np.asarray(tensors[name]).sum()) != (nodes if name == "num_sampled_nodes" else len(src)):
            raise _fail(name, f"per-hop counts sum to {int(np.asarray(tensors[name]).sum())}, not the batch's")
    del tensors["src"]
    tensors.pop("dst_count", None)
    tensors.pop("dst", None)
    tensors["n_id"], tensors["edge_index"] = n_id, np.stack([src, dst])
    if "e_id" in tensors:
        tensors["e_id"] = _indices(frame, "e_id", np.iinfo(np.int64).max, len(src))
    if "input_id" in tensors:
        tensors["input_id"] = _indices(frame, "input_id", np.iinfo(np.int64).max)
    if "y" in tensors:
        if len(tensors["y"]) != nodes:
            raise _fail("y", f"holds {len(tensors['y'])} labels where the batch has {nodes} nodes")
        if tensors["y"].dtype.kind in "iu":
            tensors["y"] = tensors["y"].astype(I64)
    return wire.Frame(frame.kind, frame.epoch, frame.batch, frame.seq, tensors, frame.nbytes)
