"""Build a graph's CSC and CSR from a stream of edges in bounded memory.

A real dataset's edge list (ogbn-papers100M: 1.6 billion edges, 26 GB once stored both ways)
does not fit in RAM beside anything else, so the structure is built by an external bucket sort:

1. *Scatter*: each chunk of edges is checked (ids in range, self loops by the policy) and its
   records (source, target, input position) are appended to one of up to ``MAX_BUCKETS`` files by
   target range. An undirected policy writes each edge both ways here.
2. *Compress by target*: each range's records (at most ``memory`` bytes of them; a range too
   large for that is split by a histogram of its targets) are sorted by target, duplicates of a
   (target, source) pair dropped keeping the earliest input position, and each column ordered by
   edge id. Dropped input positions are marked in a bitmap (one bit per input edge).
3. *Edge ids*: an edge's id is its rank among the edges the policy keeps, in input order (the
   reversed copies of an undirected graph after all of them), which the bitmap's prefix counts
   give without a second look at the input. The CSC's records are scattered again by source.
4. *Compress by source*: the same sort by source gives the CSR.

The result is exactly what sorting the whole list in RAM gives (tests check it edge by edge),
with a resident set of about ``memory`` bytes plus one bit per input edge, and temporary disk of
about 24 bytes per stored edge, removed as it is consumed.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numba
import numpy as np

from contracts.dataset import index_dtype_for
from foundation.progress import track
from remotegnn.errors import ConvertError
from remotegnn.store.graph import EdgePolicy, EdgeReport
from remotegnn.store.npy import NpyAppender, NpyReader

BUILD_MEMORY_BYTES = 256 << 20  # records sorted at once; the resident set stays near this
MAX_BUCKETS = 512  # bucket files open at once (well under the usual 1,024 descriptors)
EDGE_BLOCK = 1 << 22  # edges read, converted or written per step in the streaming passes
NODE_BLOCK = 1 << 20  # columns whose pointers are read per step
BYTES_PER_RECORD_SORTED = 64  # a record (24 B) plus the sort's order, kept list and copies
RECORD = np.dtype([("minor", "<i8"), ("major", "<i8"), ("tag", "<i8")])
REVERSE = np.int64(1 << 62)  # tag bit: the reversed copy of an input edge (undirected graphs)
POS_MASK = np.int64((1 << 62) - 1)  # tag bits: the input position (edge id in the last pass)
RANK_BLOCK_WORDS = 8  # 64-bit words per prefix count: 512 input edges
SMALL_SEGMENT = 32  # segments this short are sorted in place by insertion


def _first_edge(i: int) -> str:
    return f"edge {i}"


@dataclass(frozen=True)
class EdgeStream:
    """A graph's edges as (sources, targets) chunks in input order, ``count`` in all.

    ``chunks`` is called once. ``locate(i)`` names input edge ``i`` in errors (a converter says
    which file and row it came from).
    """

    count: int
    chunks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]
    locate: Callable[[int], str] = field(default=_first_edge)

    @classmethod
    def of(cls, src: np.ndarray, dst: np.ndarray) -> EdgeStream:
        """Edges held in RAM (or memory-mapped), streamed in blocks."""
        src, dst = np.asarray(src).ravel(), np.asarray(dst).ravel()
        if src.shape != dst.shape:
            raise ConvertError(f"sources and targets differ in length ({len(src):,} vs {len(dst):,})")

        def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for start in range(0, len(src), EDGE_BLOCK):
                yield src[start : start + EDGE_BLOCK], dst[start : start + EDGE_BLOCK]

        return cls(len(src), chunks)


@dataclass
class BuiltGraph:
    """What ``build_graph`` wrote and what the policy did."""

    report: EdgeReport
    index_dtype: str


def build_graph(
    stream: EdgeStream,
    num_nodes: int,
    policy: EdgePolicy,
    folder: Path,
    *,
    memory: int = BUILD_MEMORY_BYTES,
    progress: bool | None = None,
) -> BuiltGraph:
    """Write ``csc/*``, ``csr/*`` (indptr, indices, eid) and ``degree`` under ``folder``."""
    copies = 2 if policy.undirected else 1
    index_dtype = index_dtype_for(num_nodes, stream.count * copies)
    tmp = Path(tempfile.mkdtemp(prefix=".build.", dir=folder))
    try:
        marks = _Marks(stream.count, track_loops=policy.undirected and policy.self_loops == "keep")
        by_target = _Buckets(tmp / "by-target", num_nodes, stream.count * copies, memory)
        loops_dropped = _scatter(stream, num_nodes, policy, marks, by_target, progress)
        tags = tmp / "tags.npy"
        dups = _compress(by_target, folder / "csc", index_dtype, tags, policy, marks, stream.locate, progress)
        stored = _stored(folder / "csc")
        marks.finish()
        kept = stream.count - marks.dropped_total()
        by_source = _Buckets(tmp / "by-source", num_nodes, stored, memory)
        _edge_ids(folder / "csc", tags, marks, kept, index_dtype, by_source, progress)
        _compress(by_source, folder / "csr", index_dtype, None, None, None, stream.locate, progress)
        _degree(folder, index_dtype)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = EdgeReport(stream.count, loops_dropped, dups if policy.duplicates == "drop" else 0, stored)
    return BuiltGraph(report, index_dtype)


# -- the input-position bitmaps -----------------------------------------------------------------
class _Marks:
    """One bit per input edge: dropped (a self loop or later duplicate), and, for an undirected
    graph that keeps loops, is-a-loop (the reversed copies skip them). Prefix counts per
    ``RANK_BLOCK_WORDS`` words turn a position into its rank among kept edges."""

    def __init__(self, count: int, track_loops: bool):
        words = (count + 63) // 64 + 1
        self.dropped = np.zeros(words, dtype=np.uint64)
        self.loops = np.zeros(words if track_loops else 1, dtype=np.uint64)
        self.track_loops = track_loops

    def finish(self) -> None:
        """Keep only the loops that were kept, and count both bitmaps per block."""
        if self.track_loops:
            self.loops &= ~self.dropped
        self.dropped_cum = _block_counts(self.dropped)
        self.loops_cum = _block_counts(self.loops)

    def dropped_total(self) -> int:
        return int(self.dropped_cum[-1])


def _block_counts(words: np.ndarray) -> np.ndarray:
    counts = _popcounts(words)
    pad = (-len(counts)) % RANK_BLOCK_WORDS
    per_block = np.concatenate([counts, np.zeros(pad, np.int64)]).reshape(-1, RANK_BLOCK_WORDS).sum(axis=1)
    return np.concatenate([[0], np.cumsum(per_block)]).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, nogil=True)
def _popcounts(words):
    out = np.empty(len(words), np.int64)
    for i in range(len(words)):
        out[i] = _popcount(words[i])
    return out


@numba.njit(cache=True, nogil=True)
def _rank(words, cum, pos):
    """How many bits are set below ``pos``."""
    word = pos >> 6
    block = word // 8  # RANK_BLOCK_WORDS
    total = cum[block]
    for w in range(block * 8, word):
        total += _popcount(words[w])
    bit = pos & 63
    if bit:
        total += _popcount(words[word] & ((np.uint64(1) << np.uint64(bit)) - np.uint64(1)))
    return total


@numba.njit(cache=True, nogil=True)
def _set_bits(words, positions):
    for p in positions:
        words[p >> 6] |= np.uint64(1) << np.uint64(p & 63)


# -- bucket files -------------------------------------------------------------------------------
class _Buckets:
    """Records appended to one file per range of ``major`` node ids, read back range by range
    with at most about ``memory`` bytes of records in RAM."""

    def __init__(self, folder: Path, num_nodes: int, records: int, memory: int):
        folder.mkdir(parents=True)
        self.folder, self.num_nodes = folder, num_nodes
        self.max_records = max(1, memory // BYTES_PER_RECORD_SORTED)
        wanted = math.ceil(records / self.max_records * 1.25) if records else 1
        self.span = math.ceil(num_nodes / min(max(wanted, 1), MAX_BUCKETS))
        self.count = math.ceil(num_nodes / self.span)
        self.handles = [open(folder / f"{i}.bin", "wb") for i in range(self.count)]

    def add(self, minor: np.ndarray, major: np.ndarray, tag: np.ndarray) -> None:
        bucket = major // self.span
        order = np.argsort(bucket, kind="stable")
        records = np.empty(len(order), dtype=RECORD)
        records["minor"], records["major"], records["tag"] = minor[order], major[order], tag[order]
        ends = np.cumsum(np.bincount(bucket, minlength=self.count))
        start = 0
        for i, end in enumerate(ends):
            if end > start:
                self.handles[i].write(records[start:end].data)
            start = end

    def ranges(self) -> Iterator[tuple[int, int, np.ndarray]]:
        """(first node, end node, records) for consecutive node ranges covering every node."""
        for handle in self.handles:
            handle.close()
        for i in range(self.count):
            path = self.folder / f"{i}.bin"
            lo, hi = i * self.span, min((i + 1) * self.span, self.num_nodes)
            records = path.stat().st_size // RECORD.itemsize
            if records <= self.max_records:
                yield lo, hi, np.fromfile(path, dtype=RECORD)
            else:
                yield from self._split(path, lo, hi)
            path.unlink()

    def _split(self, path: Path, lo: int, hi: int) -> Iterator[tuple[int, int, np.ndarray]]:
        """A range with more records than fit: count its majors, then read it once per sub-range
        (a single node with more records than fit is still read whole)."""
        counts = np.zeros(hi - lo, dtype=np.int64)
        for block in _file_blocks(path):
            counts += np.bincount(block["major"] - lo, minlength=hi - lo)
        ends = np.cumsum(counts)
        cuts = [0]
        while cuts[-1] < hi - lo:
            before = int(ends[cuts[-1] - 1]) if cuts[-1] else 0
            cut = int(np.searchsorted(ends, before + self.max_records, side="right"))
            cuts.append(min(max(cut, cuts[-1] + 1), hi - lo))
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            parts = [blk[(blk["major"] >= lo + a) & (blk["major"] < lo + b)] for blk in _file_blocks(path)]
            yield lo + a, lo + b, np.concatenate(parts) if parts else np.empty(0, dtype=RECORD)


def _file_blocks(path: Path) -> Iterator[np.ndarray]:
    with open(path, "rb") as handle:
        while True:
            block = np.fromfile(handle, dtype=RECORD, count=EDGE_BLOCK)
            if not len(block):
                return
            yield block


# -- pass 1: scatter by target ------------------------------------------------------------------
def _scatter(
    stream: EdgeStream, num_nodes: int, policy: EdgePolicy, marks: _Marks, buckets: _Buckets, progress: bool | None
) -> int:
    """Check every edge and append its records; returns the self loops dropped."""
    position = loops_dropped = 0
    steps = max(1, math.ceil(stream.count / EDGE_BLOCK))
    for src, dst in track(stream.chunks(), "reading edges", total=steps, enabled=progress):
        src, dst = _as_ids(src, stream, position), _as_ids(dst, stream, position)
        if src.shape != dst.shape:
            raise ConvertError(f"sources and targets differ in length ({len(src):,} vs {len(dst):,})")
        if position + len(src) > stream.count:
            raise ConvertError(f"{stream.locate(stream.count)}: more edges than the {stream.count:,} announced")
        _check_range(src, dst, num_nodes, position, stream.locate)
        positions = np.arange(position, position + len(src), dtype=np.int64)
        position += len(src)
        loops = src == dst
        if loops.any():
            first = int(np.flatnonzero(loops)[0])
            if policy.self_loops == "error":
                raise ConvertError(
                    f"{stream.locate(int(positions[first]))} is a self loop on node {int(src[first])}; "
                    "pass --self-loops drop or keep"
                )
            if policy.self_loops == "drop":
                _set_bits(marks.dropped, positions[loops])
                loops_dropped += int(loops.sum())
                keep = ~loops
                src, dst, positions, loops = src[keep], dst[keep], positions[keep], loops[keep]
            elif marks.track_loops:
                _set_bits(marks.loops, positions[loops])
        buckets.add(src, dst, positions)
        if policy.undirected:
            other = ~loops
            buckets.add(dst[other], src[other], positions[other] | REVERSE)
    if position != stream.count:
        raise ConvertError(
            f"{stream.locate(position)}: the edges end after {position:,} of the {stream.count:,} announced"
        )
    return loops_dropped


def _as_ids(values: np.ndarray, stream: EdgeStream, position: int) -> np.ndarray:
    values = np.asarray(values).ravel()
    if values.dtype.kind not in "iu":
        raise ConvertError(f"{stream.locate(position)}: node ids are {values.dtype}; they must be integers")
    return values.astype(np.int64, copy=False)


def _check_range(src: np.ndarray, dst: np.ndarray, num_nodes: int, position: int, locate) -> None:
    """Refuse node ids outside [0, num_nodes), naming the first offending edge."""
    for name, ids in (("source", src), ("target", dst)):
        bad = np.flatnonzero((ids < 0) | (ids >= num_nodes))
        if len(bad):
            i = int(bad[0])
            raise ConvertError(
                f"{locate(position + i)}: {name} node id {int(ids[i])} is outside [0, {num_nodes}); "
                "check the node count or the id column"
            )


# -- passes 2 and 4: compress a range ----------------------------------------------------------
def _compress(
    buckets: _Buckets,
    folder: Path,
    index_dtype: str,
    tags_path: Path | None,
    policy: EdgePolicy | None,
    marks: _Marks | None,
    locate: Callable[[int], str],
    progress: bool | None,
) -> int:
    """Write ``folder``'s indptr and indices, and each edge's tag (to ``tags_path``, else as the
    edge ids in ``folder/eid.npy``); with a policy that drops or refuses duplicates, drop them.
    Returns the duplicates dropped, counted as the policy reads edges (an undirected pair once)."""
    dedup = policy is not None and policy.duplicates != "keep"
    dropped = marks.dropped if marks is not None else np.zeros(1, dtype=np.uint64)
    directed_dups = loop_dups = total = 0
    tag_file, tag_dtype = (tags_path, np.int64) if tags_path else (folder / "eid.npy", np.dtype(index_dtype))
    with (
        NpyAppender(folder / "indptr.npy", np.int64) as indptr,
        NpyAppender(folder / "indices.npy", index_dtype) as indices,
        NpyAppender(tag_file, tag_dtype) as tags,
    ):
        indptr.append(np.zeros(1, dtype=np.int64))
        what = f"grouping edges by {'target' if tags_path else 'source'}"
        for lo, hi, records in track(buckets.ranges(), what, total=buckets.count, enabled=progress):
            counts = np.zeros(hi - lo, dtype=np.int64)
            minor, major, tag = records["minor"], records["major"], records["tag"]
            keep, nonloop, loop, first_dup = _compress_range(minor, major, tag, lo, hi - lo, dedup, dropped, counts)
            if first_dup >= 0 and policy is not None and policy.duplicates == "error":
                a, b = int(minor[first_dup]), int(major[first_dup])
                u, v = (b, a) if tag[first_dup] & REVERSE else (a, b)
                raise ConvertError(f"edge ({u}, {v}) appears more than once; pass --duplicates drop or keep")
            indptr.append(total + np.cumsum(counts))
            total += len(keep)
            indices.append(minor[keep])
            tags.append(tag[keep])
            directed_dups, loop_dups = directed_dups + nonloop, loop_dups + loop
    undirected = policy is not None and policy.undirected
    return (directed_dups // 2 if undirected else directed_dups) + loop_dups


@numba.njit(cache=True, nogil=True)
def _compress_range(minor, major, tag, lo, width, dedup, dropped, counts):
    """Group records by ``major`` (in [lo, lo + width)), drop repeated (major, minor) pairs keeping
    the earliest input position (marking the others in ``dropped``), order each group by tag.

    Returns (kept records in output order, non-loop duplicates, loop duplicates, a duplicate's
    record or -1); ``counts`` receives each group's size.
    """
    n = len(major)
    start = np.zeros(width + 1, np.int64)
    for i in range(n):
        start[major[i] - lo + 1] += 1
    for c in range(width):
        start[c + 1] += start[c]
    order = np.empty(n, np.int64)
    cursor = start[:-1].copy()
    for i in range(n):
        c = major[i] - lo
        order[cursor[c]] = i
        cursor[c] += 1
    keep = np.empty(n, np.int64)
    m = 0
    nonloops = 0
    loops = 0
    first_dup = -1
    for c in range(width):
        a, b = start[c], start[c + 1]
        first = m
        if dedup and b - a > 1:
            seg = order[a:b].copy()
            _sort_segment(seg, minor, tag, True)
            for j in range(len(seg)):
                r = seg[j]
                if j > 0 and minor[r] == minor[seg[j - 1]]:
                    p = tag[r] & POS_MASK
                    dropped[p >> 6] |= np.uint64(1) << np.uint64(p & 63)
                    if minor[r] == lo + c:
                        loops += 1
                    else:
                        nonloops += 1
                    if first_dup < 0:
                        first_dup = r
                else:
                    keep[m] = r
                    m += 1
        else:
            for j in range(a, b):
                keep[m] = order[j]
                m += 1
        if m - first > 1:
            _sort_segment(keep[first:m], minor, tag, False)
        counts[c] = m - first
    return keep[:m], nonloops, loops, first_dup


@numba.njit(cache=True, nogil=True)
def _sort_segment(seg, minor, tag, by_minor):
    """Sort record indices in place by (minor, input position), or by tag."""
    if len(seg) <= SMALL_SEGMENT:
        for i in range(1, len(seg)):
            r = seg[i]
            j = i - 1
            while j >= 0 and _before(r, seg[j], minor, tag, by_minor):
                seg[j + 1] = seg[j]
                j -= 1
            seg[j + 1] = r
        return
    if by_minor:
        seg[:] = seg[np.argsort(tag[seg] & POS_MASK, kind="mergesort")]
        seg[:] = seg[np.argsort(minor[seg], kind="mergesort")]
    else:
        seg[:] = seg[np.argsort(tag[seg], kind="mergesort")]


@numba.njit(cache=True, nogil=True)
def _before(r, s, minor, tag, by_minor):
    if by_minor:
        if minor[r] != minor[s]:
            return minor[r] < minor[s]
        return (tag[r] & POS_MASK) < (tag[s] & POS_MASK)
    return tag[r] < tag[s]


# -- pass 3: edge ids ---------------------------------------------------------------------------
def _edge_ids(
    csc: Path, tags_path: Path, marks: _Marks, kept: int, index_dtype: str, by_source: _Buckets, progress: bool | None
) -> None:
    """Turn each CSC entry's tag into its edge id and scatter the entries by source."""
    indptr, indices, tags = NpyReader(csc / "indptr.npy"), NpyReader(csc / "indices.npy"), NpyReader(tags_path)
    num_nodes = indptr.rows - 1
    with NpyAppender(csc / "eid.npy", index_dtype) as eid_out:
        starts = range(0, num_nodes, NODE_BLOCK)
        for a in track(starts, "numbering edges", total=len(starts), enabled=progress):
            b = min(a + NODE_BLOCK, num_nodes)
            ip = indptr.read(a, b + 1)
            for e0 in range(int(ip[0]), int(ip[-1]), EDGE_BLOCK):
                e1 = min(e0 + EDGE_BLOCK, int(ip[-1]))
                eids = _eids(
                    tags.read(e0, e1),
                    marks.dropped,
                    marks.dropped_cum,
                    marks.loops,
                    marks.loops_cum,
                    kept,
                    marks.track_loops,
                )
                targets = a + np.searchsorted(ip, np.arange(e0, e1), side="right") - 1
                eid_out.append(eids)
                by_source.add(targets, indices.read(e0, e1).astype(np.int64), eids)


@numba.njit(cache=True, nogil=True)
def _eids(tags, dropped, dropped_cum, loops, loops_cum, kept, track_loops):
    out = np.empty(len(tags), np.int64)
    for i in range(len(tags)):
        t = tags[i]
        p = t & POS_MASK
        before = p - _rank(dropped, dropped_cum, p)
        if t & REVERSE:
            if track_loops:
                before -= _rank(loops, loops_cum, p)
            out[i] = kept + before
        else:
            out[i] = before
    return out


def _stored(csc: Path) -> int:
    return NpyReader(csc / "indices.npy").rows


def _degree(folder: Path, index_dtype: str) -> None:
    """In-degrees from the CSC's pointers, a block at a time."""
    indptr = NpyReader(folder / "csc" / "indptr.npy")
    with NpyAppender(folder / "degree.npy", index_dtype) as out:
        for a in range(0, indptr.rows - 1, NODE_BLOCK):
            out.append(np.diff(indptr.read(a, min(a + NODE_BLOCK, indptr.rows - 1) + 1)))
