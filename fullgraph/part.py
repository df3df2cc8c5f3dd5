"""One worker's part, loaded for full-graph training: local graph, features, labels, masks, and
the exchange lists (which inner rows go to which peer, which halo rows come from which)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from contracts.partition import PartitionMeta
from fullgraph.partitioner import boundary_path, open_partition, part_dir
from remotegnn.errors import DatasetError
from remotegnn.store import GraphDataset
from remotegnn.store.writer import file_digest

SPLIT_KEY_MULTIPLIER = 0x9E3779B97F4A7C15  # golden-ratio hashing of (seed, global id) for random splits
_HASH_BITS = 24  # uniform draws in [0, 1) from 24 bits of the hash


@dataclass
class WorkerPart:
    """Tensors of one part. Local ids: inner nodes ``[0, inner)``, then the halo by owner."""

    index: int
    parts: int
    inner: int
    x: torch.Tensor  # [local, dim] float32; halo rows are filled by the first exchange
    y: torch.Tensor  # [inner] int64, -1 unlabelled
    edge_index: torch.Tensor  # [2, E] local (source, target); targets are inner nodes
    in_degree: torch.Tensor  # [local] float32: the full graph's in-degrees
    global_ids: np.ndarray  # [local] int64
    send_rows: list[torch.Tensor]  # per peer: inner local ids whose rows the peer receives
    recv_counts: list[int]  # per peer: how many halo rows come from it (in halo order)
    masks: dict[str, torch.Tensor]  # split -> bool[inner]

    @property
    def local(self) -> int:
        return self.x.shape[0]

    @property
    def halo(self) -> int:
        return self.local - self.inner


def load_part(root: str | Path, index: int, meta: PartitionMeta | None = None) -> WorkerPart:
    """Open part ``index`` of the partition at ``root``, checking its boundary file's checksum."""
    root = Path(root)
    meta = meta or open_partition(root)
    if not 0 <= index < meta.parts:
        raise DatasetError(f"{root} has {meta.parts} parts; there is no part {index}")
    bpath = boundary_path(root, index)
    if not bpath.is_file() or file_digest(bpath) != meta.boundary_digests[index]:
        raise DatasetError(f"{bpath} is missing or does not match partition.json; partition the dataset again")
    ds = GraphDataset.open(part_dir(root, index))
    with np.load(bpath, allow_pickle=False) as boundary:
        arrays = {key: boundary[key] for key in boundary.files}
    inner = meta.quality[index].inner_nodes
    send_offsets, recv_offsets = arrays["send_offsets"], arrays["recv_offsets"]
    rows = arrays["send_rows"]
    edge_index = torch.from_numpy(ds.edge_index())
    masks = {}
    for split in ds.meta.splits:
        mask = torch.zeros(inner, dtype=torch.bool)
        mask[torch.from_numpy(np.asarray(ds.split(split), dtype=np.int64))] = True
        masks[split] = mask
    return WorkerPart(
        index=index,
        parts=meta.parts,
        inner=inner,
        x=torch.from_numpy(np.array(ds.features, dtype=np.float32)),
        y=torch.from_numpy(np.array(ds.labels[:inner], dtype=np.int64)),
        edge_index=edge_index,
        in_degree=torch.from_numpy(arrays["in_degree"].astype(np.float32)),
        global_ids=arrays["global_ids"],
        send_rows=[torch.from_numpy(rows[send_offsets[q] : send_offsets[q + 1]]) for q in range(meta.parts)],
        recv_counts=[int(recv_offsets[q + 1] - recv_offsets[q]) for q in range(meta.parts)],
        masks=masks,
    )


def random_split_masks(part: WorkerPart, seed: int, train: float, val: float) -> dict[str, torch.Tensor]:
    """A random train/val/test split of the whole graph that every worker derives alone.

    Node v is in train when u(seed, v) < train, in val when it is below train + val, else in
    test, where u hashes the global id: no coordination, and the same split for any partition of
    the graph (so runs with 1, 2 or 8 workers train and score on the same nodes)."""
    ids = part.global_ids[: part.inner].astype(np.uint64)
    with np.errstate(over="ignore"):
        h = (ids + np.uint64(seed + 1)) * np.uint64(SPLIT_KEY_MULTIPLIER)
        h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(32)
    u = (h >> np.uint64(64 - _HASH_BITS)).astype(np.float64) / float(1 << _HASH_BITS)
    labelled = part.y.numpy() >= 0
    return {
        "train": torch.from_numpy(labelled & (u < train)),
        "val": torch.from_numpy(labelled & (u >= train) & (u < train + val)),
        "test": torch.from_numpy(labelled & (u >= train + val)),
    }
