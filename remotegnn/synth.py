"""``remotegnn synth``: an R-MAT power-law graph whose features carry a class signal.

Structure: Graph500's R-MAT recursion (a=0.57, b=c=0.19 by default) over 2^ceil(log2 N) ids,
draws outside [0, N) redrawn, node ids then randomly permuted (so degree is not tied to id,
as in Graph500). Labels follow the unpermuted id's top bits: R-MAT puts more edges inside a
quadrant than across, so labels are mildly homophilous and a GNN's neighbour aggregation helps.
Features are the label's random centre times ``signal`` plus unit Gaussian noise.

Everything is drawn per chunk from (seed, purpose, chunk) keys, so the output is identical for a
seed whatever the chunk size or machine, and features and labels are streamed to disk chunk by
chunk (the structure is built in bounded memory as any conversion's is; the node permutation takes
8 bytes per node).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numba
import numpy as np
from pydantic import Field, model_validator

from foundation.models import StrictModel
from foundation.progress import track
from remotegnn.sampling.rng import next_u64, seed_state
from remotegnn.store import DatasetMeta, DatasetWriter, EdgePolicy, EdgeReport
from remotegnn.store.build import EdgeStream

CHUNK_EDGES = 1 << 22
CHUNK_ROWS = 1 << 16
_PURPOSE_EDGES, _PURPOSE_PERMUTATION, _PURPOSE_FEATURES, _PURPOSE_SPLITS, _PURPOSE_CENTRES = range(5)


class SynthSpec(StrictModel):
    """Parameters of a synthetic graph (validated: the CLI's flags map onto these fields)."""

    nodes: int = Field(gt=1, le=2**40, description="number of nodes")
    edges: int = Field(gt=0, le=2**40, description="R-MAT draws; stored both directions unless directed")
    dim: int = Field(gt=0, le=65536, description="feature dimension")
    classes: int = Field(gt=1, le=65536, description="number of classes")
    seed: int = Field(0, ge=0, description="random seed (same seed, same bytes)")
    dtype: str = Field("float32", pattern="^(float32|float16)$", description="feature dtype: float32 or float16")
    a: float = Field(
        0.57, gt=0, lt=1, description="R-MAT's chance, at each level, that source and target both take the lower half"
    )
    b: float = Field(
        0.19, ge=0, lt=1, description="the chance that the source takes the lower half and the target the upper"
    )
    c: float = Field(
        0.19,
        ge=0,
        lt=1,
        description="the chance that the source takes the upper half and the target the lower (both upper: the rest)",
    )
    directed: bool = Field(False, description="store each drawn edge once")
    signal: float = Field(0.3, ge=0, description="class-centre scale relative to the unit noise")
    train: float = Field(0.1, ge=0, le=1, description="fraction of nodes in the train split")
    val: float = Field(0.05, ge=0, le=1, description="fraction of nodes in the val split")
    test: float = Field(0.1, ge=0, le=1, description="fraction of nodes in the test split")

    @model_validator(mode="after")
    def _check(self) -> SynthSpec:
        if self.a + self.b + self.c >= 1:
            raise ValueError("a + b + c must be below 1 (d = 1 - a - b - c is the fourth quadrant)")
        if self.train + self.val + self.test > 1:
            raise ValueError("train + val + test fractions must not exceed 1")
        if self.classes > self.nodes:
            raise ValueError("classes cannot exceed nodes")
        return self

    @property
    def scale(self) -> int:
        return max(1, int(np.ceil(np.log2(self.nodes))))


@numba.njit(nogil=True, cache=True)
def _rmat_chunk(state, count, scale, n, a, ab, abc, src, dst):
    """Draw ``count`` R-MAT edges into src/dst (ids in [0, n), redrawn when outside)."""
    inv = 1.0 / 18446744073709551616.0
    for e in range(count):
        while True:
            u = 0
            v = 0
            for _ in range(scale):
                r = float(next_u64(state)) * inv
                u <<= 1
                v <<= 1
                if r < a:
                    pass
                elif r < ab:
                    v |= 1
                elif r < abc:
                    u |= 1
                else:
                    u |= 1
                    v |= 1
            if u < n and v < n:
                break
        src[e] = u
        dst[e] = v


def rmat_chunks(spec: SynthSpec, progress: bool | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The unpermuted R-MAT draws as int64 (src, dst), ``CHUNK_EDGES`` at a time."""
    ab, abc = spec.a + spec.b, spec.a + spec.b + spec.c
    chunks = range(0, spec.edges, CHUNK_EDGES)
    for i, start in enumerate(track(chunks, "drawing edges", total=len(chunks), enabled=progress)):
        count = min(CHUNK_EDGES, spec.edges - start)
        src, dst = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.int64)
        _rmat_chunk(seed_state(spec.seed, _PURPOSE_EDGES, i), count, spec.scale, spec.nodes, spec.a, ab, abc, src, dst)
        yield src, dst


def rmat_edges(spec: SynthSpec) -> tuple[np.ndarray, np.ndarray]:
    """All the unpermuted R-MAT draws at once."""
    parts = list(rmat_chunks(spec, progress=False))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def synth(
    spec: SynthSpec, dst: str | Path, *, overwrite: bool = False, progress: bool | None = None
) -> tuple[DatasetMeta, EdgeReport]:
    """Write the synthetic dataset described by ``spec`` to ``dst`` (atomically).

    Args:
        spec: The graph's size, features, labels, splits and seed.
        dst: The dataset directory to create.
        overwrite: Replace ``dst`` if it exists.
        progress: Show progress bars on stderr: None shows them when stderr is a terminal.

    Returns:
        The dataset's meta, and what writing its edges kept and dropped.
    """
    n = spec.nodes
    perm = np.random.default_rng([spec.seed, _PURPOSE_PERMUTATION]).permutation(n)
    # Labels come from the unpermuted id's top bits (see the module docstring).
    original = np.empty(n, dtype=np.int64)
    original[perm] = np.arange(n, dtype=np.int64)
    labels = original * spec.classes // n
    with DatasetWriter(dst, name=Path(dst).name, overwrite=overwrite) as writer:
        edges = EdgeStream(spec.edges, lambda: ((perm[s], perm[d]) for s, d in rmat_chunks(spec, progress)))
        report = writer.write_edges(edges, n, EdgePolicy(undirected=not spec.directed))
        centres = np.random.default_rng([spec.seed, _PURPOSE_CENTRES]).standard_normal((spec.classes, spec.dim))
        centres = (centres * spec.signal).astype(np.float32)
        rows = range(0, n, CHUNK_ROWS)
        with writer.feature_rows(spec.dim, spec.dtype) as features:
            for i, start in enumerate(track(rows, "writing features", total=len(rows), enabled=progress)):
                stop = min(start + CHUNK_ROWS, n)
                noise = np.random.default_rng([spec.seed, _PURPOSE_FEATURES, i]).standard_normal(
                    (stop - start, spec.dim), dtype=np.float32
                )
                noise += centres[labels[start:stop]]
                features.append(noise)
        writer.write_labels(labels, spec.classes)
        order = np.random.default_rng([spec.seed, _PURPOSE_SPLITS]).permutation(n)
        bounds = np.cumsum([0, round(spec.train * n), round(spec.val * n), round(spec.test * n)])
        for name, lo, hi in zip(("train", "val", "test"), bounds[:-1], bounds[1:]):
            if hi > lo:
                writer.write_split(name, order[lo:hi])
        meta = writer.commit(source=f"remotegnn synth {spec.model_dump_json()}")
    return meta, report
