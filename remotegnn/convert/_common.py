"""What every converter shares: the result it returns, feature sources, labels, splits, and the
one write path through ``DatasetWriter``.

Each format module only *reads* its source into arrays (or a streaming feature source) and
checks them against each other, naming the file or field at fault; ``write_dataset`` does the
rest the same way for all of them, so the edge policy, the feature dtype, progress bars and
the no-partial-output guarantee behave identically whatever the source.
"""

from __future__ import annotations

import math
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import numpy as np

from contracts.dataset import SPLITS, HeteroMeta
from foundation.errors import NotFoundError, UsageError
from foundation.models import StrictModel
from foundation.progress import track
from remotegnn.convert._labels import describe_classes
from remotegnn.errors import ConvertError
from remotegnn.store import KEEP_AS_GIVEN, DatasetMeta, DatasetWriter, EdgePolicy, EdgeReport
from remotegnn.store.build import EdgeStream
from remotegnn.store.npy import NpyReader

# Features are written in blocks of about this many bytes, so a source never needs a second
# full-size copy in RAM and the progress bar moves on large graphs.
FEATURE_BLOCK_BYTES = 1 << 26
FLOAT16_MAX = float(np.finfo(np.float16).max)
SOURCE_LIMIT = 2000  # DatasetMeta.source's max_length
T = TypeVar("T")

Choice = Literal["keep", "drop", "error"]


class ConvertWarning(UserWarning):
    """Something in the source was not carried over or was changed (e.g. extra PyG attributes)."""


class ConvertResult(StrictModel):
    """What a conversion produced: the dataset's meta, what the edge policy did, and warnings."""

    path: str
    meta: DatasetMeta
    edges: EdgeReport
    classes: list[str]
    bytes: int
    warnings: list[str]


@dataclass(frozen=True)
class PolicyOverrides:
    """The edge-policy fields a user set; the rest come from the format's default policy."""

    self_loops: Choice | None = None
    duplicates: Choice | None = None
    undirected: bool | None = None

    def over(self, default: EdgePolicy) -> EdgePolicy:
        given = {k: v for k, v in vars(self).items() if v is not None}
        return EdgePolicy(**{**default.model_dump(), **given})  # validated, unlike model_copy(update=...)


def resolve_policy(policy: EdgePolicy | PolicyOverrides | None, default: EdgePolicy) -> EdgePolicy:
    """A full policy wins; overrides (what the CLI flags set) are applied over the format's default."""
    if isinstance(policy, EdgePolicy):
        return policy
    return (policy or PolicyOverrides()).over(default)


def describe_policy(policy: EdgePolicy) -> str:
    direction = "undirected (stored both ways)" if policy.undirected else "directed"
    return f"{direction}, self loops {policy.self_loops}, duplicates {policy.duplicates}"


# -- features -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ZeroRows:
    """A run of all-zero feature rows (a node type without features), stored as a file hole."""

    rows: int

    def __len__(self) -> int:
        return self.rows


class FeatureSource(ABC):
    """Feature rows produced block by block, in node order.

    ``rows`` is the row count when known before reading (it is checked before anything is
    written); a streaming source leaves it ``None`` and ``write_dataset`` counts as it goes.
    """

    what: str
    dim: int
    dtype: np.dtype
    rows: int | None
    hint: str = ""  # how to fix a row count that disagrees with the graph

    @abstractmethod
    def blocks(self, max_rows: int) -> Iterator[np.ndarray | ZeroRows]:
        """Consecutive row blocks of at most ``max_rows`` rows (a streaming source may return its own)."""

    def _tracked(self, steps: Iterable[T], max_rows: int) -> Iterator[T]:
        """``steps``, one per block of a source whose row count is known, with a progress bar."""
        rows = self.rows
        assert rows is not None, "only a source that knows its row count has a known number of blocks"
        return track(steps, f"writing {self.what}", total=-(-rows // max_rows))

    def _ranges(self, max_rows: int) -> Iterator[tuple[int, int]]:
        """(start, stop) of each block of a source whose row count is known, with a progress bar."""
        rows = self.rows
        assert rows is not None
        for start in self._tracked(range(0, rows, max_rows), max_rows):
            yield start, min(start + max_rows, rows)


class DenseFeatures(FeatureSource):
    """A dense [N, F] array (in RAM or memory-mapped), copied in blocks."""

    def __init__(self, array: np.ndarray, what: str):
        if array.ndim != 2 or array.shape[1] == 0:
            raise ConvertError(
                f"{what} has shape {list(array.shape)}; features must be a 2-D [nodes, dim] array "
                "with at least one column"
            )
        if array.dtype.kind not in "fiub":
            raise ConvertError(f"{what} has dtype {array.dtype}; features must be numbers")
        self.array, self.what = array, what
        self.rows, self.dim, self.dtype = array.shape[0], array.shape[1], array.dtype

    def blocks(self, max_rows: int) -> Iterator[np.ndarray]:
        for start, stop in self._ranges(max_rows):
            yield self.array[start:stop]


class NpyFeatures(FeatureSource):
    """A ``.npy`` [N, F] array (a file or an ``.npz`` member) read a block at a time by plain file
    reads, so a matrix larger than RAM is converted with one block resident."""

    def __init__(self, reader: NpyReader):
        if len(reader.shape) != 2 or reader.shape[1] == 0:
            raise ConvertError(
                f"{reader.what} has shape {list(reader.shape)}; features must be a 2-D [nodes, dim] array "
                "with at least one column"
            )
        self.reader, self.what = reader, reader.what
        self.rows, self.dim, self.dtype = reader.shape[0], reader.shape[1], reader.dtype

    def blocks(self, max_rows: int) -> Iterator[np.ndarray]:
        yield from self._tracked(self.reader.blocks(max_rows), max_rows)  # one handle: a member inflates once


class StackedFeatures(FeatureSource):
    """Node types' features one after the other in the id space, each padded to the widest type
    with zero columns; a type without features is a run of zero rows that takes no disk."""

    def __init__(self, parts: list[FeatureSource | int], what: str):
        sources = [p for p in parts if isinstance(p, FeatureSource)]
        self.parts, self.what = parts, what
        self.dim = max((p.dim for p in sources), default=1)
        self.dtype = np.result_type(*(p.dtype for p in sources)) if sources else np.dtype(np.float32)
        self.rows = sum(p if isinstance(p, int) else (p.rows or 0) for p in parts)

    def blocks(self, max_rows: int) -> Iterator[np.ndarray | ZeroRows]:
        for part in self.parts:
            if isinstance(part, int):
                yield ZeroRows(part)
                continue
            for block in part.blocks(max_rows):
                if not isinstance(block, ZeroRows) and block.shape[1] < self.dim:
                    block = np.pad(block, ((0, 0), (0, self.dim - block.shape[1])))
                yield block


class MultiHotFeatures(FeatureSource):
    """Sparse sets of feature ids per node (MUSAE's JSON) written as dense 0/1 rows.

    The ids are sorted by node once (CSR-like: ``indptr`` over nodes, ``cols``), so each block
    of rows is filled from one contiguous slice with a single vectorised assignment.
    """

    def __init__(self, nodes: np.ndarray, counts: np.ndarray, cols: np.ndarray, num_nodes: int, what: str):
        order = np.argsort(np.repeat(nodes, counts), kind="stable")
        self.cols = cols[order]
        per_node = np.zeros(num_nodes, dtype=np.int64)
        per_node[nodes] = counts  # node ids are unique: they are the JSON object's keys
        self.indptr = np.concatenate([[0], np.cumsum(per_node)])
        self.what, self.rows = what, num_nodes
        self.dim = int(cols.max()) + 1 if len(cols) else 1
        self.dtype = np.dtype(np.float32)

    def blocks(self, max_rows: int) -> Iterator[np.ndarray]:
        for start, stop in self._ranges(max_rows):
            block = np.zeros((stop - start, self.dim), dtype=np.float32)
            lo, hi = self.indptr[start], self.indptr[stop]
            local = np.repeat(np.arange(stop - start), np.diff(self.indptr[start : stop + 1]))
            block[local, self.cols[lo:hi]] = 1.0
            yield block


def constant_features(num_nodes: int, notes: list[str], what: str) -> DenseFeatures:
    """One all-ones column for a graph without features: the format needs a feature matrix, and a
    constant input is the usual choice for featureless graphs (a GNN then learns from structure)."""
    notes.append(f"{what} has no node features; stored one constant feature (all ones) per node")
    return DenseFeatures(np.ones((num_nodes, 1), dtype=np.float32), "constant features")


def feature_dtype(requested: str | None, source: np.dtype, notes: list[str], what: str) -> str:
    """The requested dtype, else the source's when the format can hold it exactly, else float32."""
    if requested is not None:
        if requested not in ("float32", "float16"):
            raise UsageError(f"--dtype {requested!r} is not supported; use float32 or float16")
        return requested
    if source.name in ("float32", "float16"):
        return source.name
    if source.kind == "f":
        notes.append(f"{what} is {source.name}; stored as float32 (the format holds float32 or float16)")
    return "float32"


# -- labels and splits --------------------------------------------------------------------------
def expect_rows(rows: int, num_nodes: int, what: str, hint: str = "") -> None:
    if rows != num_nodes:
        raise ConvertError(
            f"{what} has {rows:,} rows but the graph has {num_nodes:,} nodes" + (f"; {hint}" if hint else "")
        )


def pick_split(values: np.ndarray, num_nodes: int, index: int, what: str) -> np.ndarray:
    """A split as sorted node ids, from a boolean mask [N], node ids, or several masks ([K, N] as
    the heterophilous-graphs npz files store them, or [N, K] as PyG's multi-split datasets do),
    of which ``index`` is taken."""
    values = np.asarray(values)
    if values.dtype.kind == "b":
        if values.ndim == 2 and num_nodes in values.shape:
            masks = values if values.shape[1] == num_nodes else values.T
            if not 0 <= index < len(masks):
                raise UsageError(
                    f"--split-index {index} is out of range: {what} holds {len(masks)} splits (0..{len(masks) - 1})"
                )
            values = masks[index]
        if values.shape != (num_nodes,):
            raise ConvertError(
                f"{what} has shape {list(values.shape)}; a mask must have one entry per node "
                f"({num_nodes:,}) or be [splits, {num_nodes:,}]"
            )
        return np.flatnonzero(values)
    if values.dtype.kind not in "iu" or values.ndim != 1:
        raise ConvertError(
            f"{what} is {values.dtype}{list(values.shape)}; a split must be a boolean mask or a list of node ids"
        )
    bad = (values < 0) | (values >= num_nodes)
    if bad.any():
        raise ConvertError(f"{what} holds node id {int(values[bad][0])}, outside [0, {num_nodes:,})")
    return np.unique(values.astype(np.int64))


def parse_ratios(text: str) -> tuple[float, float, float] | None:
    """'0.6,0.2,0.2' -> (0.6, 0.2, 0.2); 'none' -> None (no random split)."""
    if text.strip().lower() == "none":
        return None
    try:
        ratios = tuple(float(v) for v in text.split(","))
    except ValueError:
        ratios = ()
    if len(ratios) != 3 or min(ratios) < 0 or sum(ratios) > 1 + 1e-9 or not all(map(math.isfinite, ratios)):
        raise UsageError(
            f"--split-ratios {text!r}: give three non-negative fractions for train,val,test "
            "that sum to at most 1 (e.g. 0.6,0.2,0.2), or none"
        )
    return ratios[0], ratios[1], ratios[2]  # the length check above makes it a 3-tuple


def random_split(
    labels: np.ndarray | None, num_nodes: int, ratios: Sequence[float], seed: int
) -> dict[str, np.ndarray]:
    """A seeded random train/val/test split of the labelled nodes (all nodes when unlabelled).

    Sizes are floor(ratio * n) for train and val; test takes the rest when the ratios sum to 1,
    so no labelled node is left out. The same seed gives the same split.
    """
    pool = np.arange(num_nodes) if labels is None else np.flatnonzero(labels >= 0)
    perm = np.random.default_rng(seed).permutation(pool)
    n = len(perm)
    n_train, n_val = int(ratios[0] * n), int(ratios[1] * n)
    n_test = n - n_train - n_val if abs(sum(ratios) - 1) < 1e-9 else int(ratios[2] * n)
    bounds = np.cumsum([0, n_train, n_val, n_test])
    return {name: np.sort(perm[bounds[i] : bounds[i + 1]]) for i, name in enumerate(SPLITS)}


def choose_splits(
    stored: dict[str, np.ndarray],
    labels: np.ndarray | None,
    num_nodes: int,
    ratios: Sequence[float] | None,
    seed: int,
    stored_text: str,
) -> tuple[dict[str, np.ndarray], str]:
    """The source's own splits when it has any, else a seeded random split when ``ratios`` are
    given, else none; with a phrase for the dataset's ``source`` saying which."""
    if stored:
        return stored, stored_text
    if ratios:
        ratio_text = "/".join(f"{r:g}" for r in ratios)
        return random_split(labels, num_nodes, ratios, seed), f"random {ratio_text} split, seed {seed}"
    return {}, "no split"


# -- files --------------------------------------------------------------------------------------
def require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        where = "does not exist" if not path.exists() else "is not a file"
        raise ConvertError(f"{what} {path} {where}")
    return path


# -- the one write path -------------------------------------------------------------------------
def write_dataset(
    dst: str | os.PathLike[str],
    *,
    name: str,
    edges: tuple[np.ndarray, np.ndarray] | EdgeStream,
    num_nodes: int,
    policy: EdgePolicy,
    features: FeatureSource,
    labels: np.ndarray | None = None,
    classes: Sequence[str] = (),
    splits: dict[str, np.ndarray] | None = None,
    dtype: str | None = None,
    source: str,
    overwrite: bool = False,
    notes: list[str] | None = None,
    edge_weights: tuple[str, np.ndarray] | None = None,
    hetero: HeteroMeta | None = None,
) -> ConvertResult:
    """Write a converted graph atomically and report it.

    ``edge_weights`` (name, one weight per input edge) are stored for weighted sampling; they
    need the edges kept as given, since a policy that drops or adds edges has no weight for them.

    Inputs are assumed checked against each other by the caller, except a streaming feature
    source's row count, which is known only at its end: a mismatch there aborts the write and
    the writer removes its temporary directory, so the destination never holds a partial dataset.
    ``notes`` are the converter's warnings; each is also issued as a ``ConvertWarning``.
    """
    notes = list(notes or [])
    if features.rows is not None:
        expect_rows(features.rows, num_nodes, features.what, features.hint)
    out_dtype = feature_dtype(dtype, features.dtype, notes, features.what)
    if edge_weights is not None and policy != KEEP_AS_GIVEN:
        raise ConvertError(
            f"{edge_weights[0]}: edge weights need the edges kept as given; drop the edge-cleaning options"
        )
    with DatasetWriter(dst, name=name, overwrite=overwrite) as writer:
        stream = edges if isinstance(edges, EdgeStream) else EdgeStream.of(*edges)
        report = writer.write_edges(stream, num_nodes, policy)
        if edge_weights is not None:
            writer.write_edge_weights(*edge_weights)
        writer.hetero = hetero
        _write_features(writer, features, num_nodes, out_dtype, notes)
        if labels is not None:
            writer.write_labels(labels, num_classes=len(classes) or None)
        for split, ids in (splits or {}).items():
            writer.write_split(split, ids)
        parts = [source, describe_classes(classes), f"edges {describe_policy(policy)}"]
        meta = writer.commit(source=_clip("; ".join(p for p in parts if p), SOURCE_LIMIT))
    for note in notes:
        warnings.warn(note, ConvertWarning, stacklevel=3)
    path = Path(dst)
    size = sum(f.bytes for f in meta.files.values()) + (path / "meta.json").stat().st_size
    return ConvertResult(path=str(path), meta=meta, edges=report, classes=list(classes), bytes=size, warnings=notes)


def _write_features(
    writer: DatasetWriter, features: FeatureSource, num_nodes: int, dtype: str, notes: list[str]
) -> None:
    max_rows = max(1, FEATURE_BLOCK_BYTES // (features.dim * 4))
    pos = overflow = 0
    with writer.feature_rows(features.dim, dtype) as out:
        for block in features.blocks(max_rows):
            if pos + len(block) > num_nodes:
                raise ConvertError(
                    f"{features.what} has more rows than the graph has nodes ({num_nodes:,})"
                    + (f"; {features.hint}" if features.hint else "")
                )
            if isinstance(block, ZeroRows):
                out.skip(block.rows)
                pos += block.rows
                continue
            with np.errstate(over="ignore"):  # counted below and reported once
                out.append(block)
            if dtype == "float16" and block.dtype != np.float16:
                overflow += int(np.count_nonzero(np.isfinite(block) & (np.abs(block) > FLOAT16_MAX)))
            pos += len(block)
        expect_rows(pos, num_nodes, features.what, features.hint)
    if overflow:
        notes.append(f"{overflow:,} feature values exceed float16's range (65,504) and became inf; use --dtype float32")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def choose_source(folder: Path, name: str | None, names: list[str], what: str, none_found: str, incomplete=None) -> str:
    """Which of a folder's ``names`` (case-insensitive) to convert: the only one, or the one
    ``--name`` gives. ``incomplete(name)`` may raise a more precise error for a half-present set."""
    if name is None:
        if not names:
            raise ConvertError(f"{folder} holds no {none_found}")
        if len(names) > 1:
            raise UsageError(f"{folder}: pass --name to choose a {what} ({', '.join(names)})")
        return names[0]
    by_lower = {n.lower(): n for n in names}
    if name.lower() not in by_lower:
        if incomplete is not None:
            incomplete(name)
        raise NotFoundError(what, name, names)
    return by_lower[name.lower()]
