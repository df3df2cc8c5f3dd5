"""``remotegnn synth``: an R-MAT power-law graph whose features carry a class signal.

Structure: Graph500's R-MAT recursion (a=0.57, b=c=0.19 by default) over 2^ceil(log2 N) ids,
draws outside [0, N) redrawn, node ids then randomly permuted (so degree is not tied to id,
as in Graph500). Labels follow the unpermuted id's top bits: R-MAT puts more edges inside a
quadrant than across, so labels are mildly homophilous and a GNN's neighbour aggregation helps.
Features are the label's random centre times ``signal`` plus unit Gaussian noise.

Everything is drawn per chunk from (seed, purpose, chunk) keys, so the output is identical for a
seed whatever the chunk size or machine, and features and labels are streamed to disk chunk by
chunk (the structure, about 40 bytes per edge while building, is made in RAM).
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from foundation.progress import track
from remotegnn.sampling.rng import next_u64, seed_state
from remotegnn.store import DatasetMeta, DatasetWriter, EdgePolicy, EdgeReport

CHUNK_EDGES = 1 << 22
CHUNK_ROWS = 1 << 16
_PURPOSE_EDGES, _PURPOSE_PERMUTATION, _PURPOSE_FEATURES, _PURPOSE_SPLITS, _PURPOSE_CENTRES = range(5)


class SynthSpec(BaseModel):
    """Parameters of a synthetic graph (validated: the CLI's flags map onto these fields)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: int = Field(gt=1, le=2**40)
    edges: int = Field(gt=0, le=2**40, description="R-MAT draws; stored both directions unless directed")
    dim: int = Field(gt=0, le=65536)
    classes: int = Field(gt=1, le=65536)
    seed: int = Field(0, ge=0)
    dtype: str = Field("float32", pattern="^(float32|float16)$")
    a: float = Field(0.57, gt=0, lt=1)
    b: float = Field(0.19, ge=0, lt=1)
    c: float = Field(0.19, ge=0, lt=1)
    directed: bool = False
    signal: float = Field(0.3, ge=0, description="class-centre scale relative to the unit noise")
    train: float = Field(0.1, ge=0, le=1)
    val: float = Field(0.05, ge=0, le=1)
    test: float = Field(0.1, ge=0, le=1)

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


def rmat_edges(spec: SynthSpec, progress: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The unpermuted R-MAT draws as int64 (src, dst)."""
    src = np.empty(spec.edges, dtype=np.int64)
    dst = np.empty(spec.edges, dtype=np.int64)
    ab, abc = spec.a + spec.b, spec.a + spec.b + spec.c
    chunks = range(0, spec.edges, CHUNK_EDGES)
    for i, start in enumerate(track(chunks, "drawing edges", total=len(chunks), enabled=progress)):
        stop = min(start + CHUNK_EDGES, spec.edges)
        state = seed_state(spec.seed, _PURPOSE_EDGES, i)
        _rmat_chunk(state, stop - start, spec.scale, spec.nodes, spec.a, ab, abc, src[start:stop], dst[start:stop])
    return src, dst


def synth(
    spec: SynthSpec, dst: str | Path, *, overwrite: bool = False, progress: bool | None = None
) -> tuple[DatasetMeta, EdgeReport]:
    """Write the synthetic dataset described by ``spec`` to ``dst`` (atomically)."""
    n = spec.nodes
    perm = np.random.default_rng([spec.seed, _PURPOSE_PERMUTATION]).permutation(n)
    raw_src, raw_dst = rmat_edges(spec, progress)
    # Labels come from the unpermuted id's top bits (see the module docstring).
    original = np.empty(n, dtype=np.int64)
    original[perm] = np.arange(n, dtype=np.int64)
    labels = original * spec.classes // n
    with DatasetWriter(dst, name=Path(dst).name, overwrite=overwrite) as writer:
        report = writer.write_graph(perm[raw_src], perm[raw_dst], n, EdgePolicy(undirected=not spec.directed))
        del raw_src, raw_dst
        centres = np.random.default_rng([spec.seed, _PURPOSE_CENTRES]).standard_normal((spec.classes, spec.dim))
        centres = (centres * spec.signal).astype(np.float32)
        features = writer.features(spec.dim, spec.dtype)
        rows = range(0, n, CHUNK_ROWS)
        for i, start in enumerate(track(rows, "writing features", total=len(rows), enabled=progress)):
            stop = min(start + CHUNK_ROWS, n)
            noise = np.random.default_rng([spec.seed, _PURPOSE_FEATURES, i]).standard_normal(
                (stop - start, spec.dim), dtype=np.float32
            )
            noise += centres[labels[start:stop]]
            features[start:stop] = noise
        features.flush()
        del features
        writer.write_labels(labels, spec.classes)
        order = np.random.default_rng([spec.seed, _PURPOSE_SPLITS]).permutation(n)
        bounds = np.cumsum([0, round(spec.train * n), round(spec.val * n), round(spec.test * n)])
        for name, lo, hi in zip(("train", "val", "test"), bounds[:-1], bounds[1:]):
            if hi > lo:
                writer.write_split(name, order[lo:hi])
        meta = writer.commit(source=f"remotegnn synth {spec.model_dump_json()}")
    return meta, report
