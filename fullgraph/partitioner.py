"""``fullgraph partition``: split a dataset into n workers' parts, in the dataset format.

A part holds what one worker may see and nothing more (the setting of distributed training over
a partitioned graph, where raw features and edges stay with their owner):

- its **inner nodes** (local ids ``0..inner-1``, in global id order) with their features,
  labels and split membership;
- every **in-edge of an inner node**, so one layer's aggregation for an inner node is complete
  once the sources' representations are present;
- its **halo**: the remote sources of those edges (local ids ``inner..``), ordered by owner and
  then global id. Their feature rows are zero in the part's dataset: the owner sends them in the
  first exchange, as it sends every later representation.

``DST/part-P/`` is a dataset (``GraphDataset.open`` reads it; ``remotegnn info`` shows it).
``DST/boundary-P.npz`` holds the exchange lists (global ids of the local nodes, each halo node's
owner, the full graph's in-degrees of the local nodes for GCN's normalisation, and per peer the
inner rows to send and the halo rows to receive). ``DST/partition.json`` records the method, the
quality (cut edges, boundary nodes per part) and each boundary file's checksum. The directory
is built beside ``DST`` and renamed into place (:class:`foundation.partial.PartialDirectory`), so
a failure or an interruption never leaves a partial partition.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from contracts.partition import MAX_PARTS, PartitionMeta, PartitionMethod, PartQuality
from foundation.errors import UsageError
from foundation.fileio import read_model, write_model
from foundation.partial import PartialDirectory
from foundation.progress import track
from remotegnn.errors import DatasetError
from remotegnn.store import KEEP_AS_GIVEN, DatasetWriter, GraphDataset
from remotegnn.store.writer import file_digest

PARTITION_FILE = "partition.json"
FEATURE_COPY_ROWS = 1 << 16  # rows copied per step, so a part of a large dataset streams


def part_dir(root: Path, part: int) -> Path:
    return root / f"part-{part}"


def boundary_path(root: Path, part: int) -> Path:
    return root / f"boundary-{part}.npz"


# -- assignment ---------------------------------------------------------------------------------
def assign_parts(ds: GraphDataset, parts: int, method: PartitionMethod, seed: int = 0) -> np.ndarray:
    """The owner of every node: int32[num_nodes] in ``[0, parts)``.

    ``random`` deals a seeded permutation round-robin (sizes differ by at most one): the paper's
    setting, where data placement is imposed rather than chosen. ``metis`` asks METIS (pymetis)
    for a balanced k-way partition with few cut edges, for when the user may choose placement.
    """
    n = ds.meta.num_nodes
    if not 1 <= parts <= min(n, MAX_PARTS):
        raise UsageError(f"--parts {parts}: choose between 1 and {min(n, MAX_PARTS)} (the graph has {n:,} nodes)")
    if method == "random":
        owner = np.empty(n, dtype=np.int32)
        owner[np.random.default_rng(seed).permutation(n)] = np.arange(n) % parts
        return owner
    if method == "metis":
        return _metis(ds, parts, seed)
    raise UsageError(f"--method {method!r}: use random or metis")


def _metis(ds: GraphDataset, parts: int, seed: int) -> np.ndarray:
    if parts == 1:
        return np.zeros(ds.meta.num_nodes, dtype=np.int32)
    try:
        import pymetis
    except ImportError:
        raise UsageError(
            "--method metis needs pymetis: install it with `pip install 'memorybridge[partition]'`, "
            "or use --method random"
        ) from None
    xadj, adjncy = symmetric_adjacency(ds)
    result = pymetis.part_graph(parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy), options=pymetis.Options(seed=seed))
    return np.asarray(result.vertex_part, dtype=np.int32)


def symmetric_adjacency(ds: GraphDataset) -> tuple[np.ndarray, np.ndarray]:
    """The graph as METIS wants it: undirected, no self loops, no duplicates (CSR over int64)."""
    n = ds.meta.num_nodes
    edges = ds.edge_index()
    src = np.concatenate([edges[0], edges[1]])
    dst = np.concatenate([edges[1], edges[0]])
    keep = src != dst
    keys = np.unique(src[keep] * n + dst[keep])
    src, dst = keys // n, keys % n
    xadj = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=xadj[1:])
    return xadj, dst


# -- writing ------------------------------------------------------------------------------------
def _in_edges(ds: GraphDataset, inner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sources (global ids) and targets (positions in ``inner``) of every in-edge of ``inner``."""
    indptr, indices, _ = ds.csc
    starts = np.asarray(indptr[inner], dtype=np.int64)
    counts = np.asarray(indptr[inner + 1], dtype=np.int64) - starts
    total = int(counts.sum())
    first = np.cumsum(counts) - counts  # where each node's run starts in the output
    positions = np.repeat(starts - first, counts) + np.arange(total, dtype=np.int64)
    sources = np.asarray(indices[positions], dtype=np.int64)
    targets = np.repeat(np.arange(len(inner), dtype=np.int64), counts)
    return sources, targets


def write_partition(
    ds: GraphDataset,
    dst: str | Path,
    parts: int,
    method: PartitionMethod = "random",
    *,
    seed: int = 0,
    overwrite: bool = False,
    progress: bool | None = None,
) -> PartitionMeta:
    """Partition ``ds`` into ``parts`` workers' parts under ``dst`` (atomically)."""
    dst = Path(dst)
    if dst.exists() and not overwrite:
        raise UsageError(f"{dst} already exists; pass --overwrite to replace it, or choose another path")
    owner = assign_parts(ds, parts, method, seed)
    inner = [np.flatnonzero(owner == p) for p in range(parts)]
    edges, halo = [], []
    for p in range(parts):
        sources, targets = _in_edges(ds, inner[p])
        remote = np.unique(sources[owner[sources] != p])
        halo.append(remote[np.lexsort((remote, owner[remote]))])  # by owner, then global id
        edges.append((sources, targets))
    with PartialDirectory(dst) as partial:
        tmp = partial.path
        quality, digests = [], []
        for p in track(range(parts), "writing parts", total=parts, enabled=progress):
            quality.append(_write_part(ds, tmp, p, parts, owner, inner, halo, edges[p]))
            digests.append(file_digest(boundary_path(tmp, p)))
        meta = PartitionMeta(
            dataset=ds.meta.name,
            num_nodes=ds.meta.num_nodes,
            num_edges=ds.meta.num_edges,
            feature_dim=ds.meta.feature_dim,
            feature_dtype=ds.meta.feature_dtype,
            num_classes=ds.meta.num_classes,
            parts=parts,
            method=method,
            seed=seed,
            cut_edges=sum(q.cut_edges for q in quality),
            boundary_rows=sum(q.halo_nodes for q in quality),
            quality=quality,
            boundary_digests=digests,
        )
        write_model(tmp / PARTITION_FILE, meta)
        partial.commit()
    return meta


def _write_part(ds, root, p, parts, owner, inner, halo, edges) -> PartQuality:
    mine, remote = inner[p], halo[p]
    sources, targets = edges
    n_inner, n_local = len(mine), len(mine) + len(remote)
    global_ids = np.concatenate([mine, remote])
    local_of = np.full(ds.meta.num_nodes, -1, dtype=np.int64)
    local_of[global_ids] = np.arange(n_local)
    # Rows this part sends to q: q's halo nodes that p owns, in q's halo order (global id).
    send = [
        np.searchsorted(mine, halo[q][owner[halo[q]] == p]) if q != p else np.empty(0, np.int64) for q in range(parts)
    ]
    recv_counts = np.bincount(owner[remote], minlength=parts) if len(remote) else np.zeros(parts, np.int64)
    with DatasetWriter(part_dir(root, p), name=f"{ds.meta.name}-part{p}of{parts}") as writer:
        writer.write_graph(local_of[sources], targets, max(n_local, 1), KEEP_AS_GIVEN)
        features = writer.features(ds.meta.feature_dim, ds.meta.feature_dtype)
        for start in range(0, n_inner, FEATURE_COPY_ROWS):
            stop = min(start + FEATURE_COPY_ROWS, n_inner)
            features[start:stop] = ds.features[mine[start:stop]]
        features.flush()
        del features
        labels = np.full(n_local, -1, dtype=np.int64)
        labels[:n_inner] = ds.labels[mine]
        writer.write_labels(labels, ds.meta.num_classes)
        split_nodes = {}
        for split in ds.meta.splits:
            ids = np.asarray(ds.split(split), dtype=np.int64)
            local = local_of[ids[owner[ids] == p]]
            writer.write_split(split, local)
            split_nodes[split] = len(local)
        writer.commit(source=f"fullgraph partition: part {p} of {parts} of {ds.meta.name}")
    np.savez(
        boundary_path(root, p),
        global_ids=global_ids,
        halo_owner=owner[remote].astype(np.int32),
        in_degree=np.asarray(ds.degree, dtype=np.int64)[global_ids],
        send_offsets=np.concatenate([[0], np.cumsum([len(s) for s in send])]).astype(np.int64),
        send_rows=np.concatenate(send).astype(np.int64),
        recv_offsets=np.concatenate([[0], np.cumsum(recv_counts)]).astype(np.int64),
    )
    shared = np.zeros(n_inner, dtype=bool)
    for q in range(parts):
        shared[send[q]] = True
    return PartQuality(
        part=p,
        inner_nodes=n_inner,
        halo_nodes=len(remote),
        shared_nodes=int(shared.sum()),
        edges=len(sources),
        cut_edges=int((owner[sources] != p).sum()),
        split_nodes=split_nodes,
    )


def open_partition(path: str | Path) -> PartitionMeta:
    """Read ``partition.json``; the error names what is wrong or missing."""
    path = Path(path)
    if not (path / PARTITION_FILE).is_file():
        raise DatasetError(f"{path} is not a partition directory (make one with `fullgraph partition DATASET DST`)")
    return read_model(path / PARTITION_FILE, PartitionMeta, "partition file")


__all__ = [
    "PartQuality",
    "PartitionMeta",
    "assign_parts",
    "boundary_path",
    "open_partition",
    "part_dir",
    "write_partition",
]
