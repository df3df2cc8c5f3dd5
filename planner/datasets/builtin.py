"""Built-in dataset profiles (sizes from each dataset's published statistics; sources named per profile).

igb260m and mag240m are the graphs no single affordable GPU machine holds (1.1 TB and 187 GB of
features): the two-level design's home ground.

Only papers100M has published cache curves (the MemoryBridge paper: degree skew; GNNLab: pre-sampling). The
others use an assumed power-law degree curve y = x**a, stated in their ``source``; measure the real
one with ``remotegnn profile`` and pass it with ``--dataset-file``.
"""

from __future__ import annotations

from contracts.profile import DatasetProfile, canonical_dataset_name, csr_csc_bytes
from foundation.errors import NotFoundError

_POWER_LAW_XS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7)


def _power_law(exponent: float) -> list[tuple[float, float]]:
    return [(x, round(x**exponent, 4)) for x in _POWER_LAW_XS]


def _profile(name, *, nodes, edges, rows, dim, dtype="float32", train, classes, curves, source) -> DatasetProfile:
    return DatasetProfile(
        name=name,
        num_nodes=nodes,
        num_edges=edges,
        feature_rows=rows,
        feature_dim=dim,
        feature_dtype=dtype,
        index_bytes=4,
        num_train=train,
        num_classes=classes,
        structure_bytes=csr_csc_bytes(nodes, edges, 4),
        cache_curves=curves,
        source=source,
    )


_ASSUMED = "cache curve assumed: power law y = x**{a} (no published curve); sizes: {sizes}"

BUILTIN: dict[str, DatasetProfile] = {
    p.name: p
    for p in (
        _profile(
            "papers100M",
            nodes=111_059_956,
            edges=1_615_685_872,
            rows=111_059_956,
            dim=128,
            train=1_207_179,
            classes=172,
            curves={
                # The MemoryBridge paper: top 1/5/10% of nodes by degree hold 13.2/31.3/44.5% of edges; a
                # degree cache of ~30% of the data reaches 66.6% hit rate.
                "degree": [(0.01, 0.132), (0.05, 0.313), (0.10, 0.445), (0.30, 0.666)],
                # GNNLab artifact tables (papers100M, 2-hop GCN), pre-sampling policy.
                "presample": [(0.05, 0.960), (0.10, 0.983), (0.20, 0.985), (0.30, 0.987)],
            },
            source="OGB ogbn-papers100M sizes; degree curve: the MemoryBridge paper; "
            "presample curve: GNNLab (SJTU-IPADS/gnnlab)",
        ),
        _profile(
            "mag240m",
            nodes=244_160_499,
            edges=1_728_364_232,
            rows=121_751_666,
            dim=768,
            dtype="float16",
            train=1_112_392,
            classes=153,
            curves={"degree": _power_law(0.45)},
            source=_ASSUMED.format(
                a=0.45,
                sizes="OGB-LSC MAG240M, published figures (all 3 node types; the full 768 x fp16 features of "
                "the 121,751,666 papers, 187 GB; 153 classes)",
            ),
        ),
        _profile(
            # IGB-HOM full (the IGB paper, "Addressing The Gaps In Labeling, Features, Heterogeneity, and
            # Size of Public Graph Datasets"): 1024 x fp32 paper embeddings, 1.10 TB, no single affordable
            # GPU machine holds it. Seeds: 60% of the 227,130,858 labelled nodes (IGB's own split).
            "igb260m",
            nodes=269_346_174,
            edges=3_995_777_033,
            rows=269_346_174,
            dim=1024,
            train=136_278_514,
            classes=19,
            curves={"degree": _power_law(0.45)},
            source=_ASSUMED.format(
                a=0.45,
                sizes="IGB-HOM full, published figures (1024 x fp32 features, 1.10 TB; 19 classes; "
                "train = 60% of 227,130,858 labelled nodes)",
            ),
        ),
        _profile(
            # Friendster has no features; benchmarks attach random 128 x fp32 rows (33.6 GB). It has no
            # labels either: we assume 1% of nodes as training seeds (our choice, stated in `source`).
            "friendster",
            nodes=65_608_366,
            edges=2 * 1_806_067_135,
            rows=65_608_366,
            dim=128,
            train=656_084,
            classes=None,
            curves={"degree": _power_law(0.5)},
            source=_ASSUMED.format(
                a=0.5,
                sizes="SNAP com-Friendster, symmetrised; random 128 x fp32 features; 1% of nodes as seeds (assumed)",
            ),
        ),
        _profile(
            "products",
            nodes=2_449_029,
            edges=123_718_280,
            rows=2_449_029,
            dim=100,
            train=196_615,
            classes=47,
            curves={"degree": _power_law(0.40)},
            source=_ASSUMED.format(a=0.40, sizes="OGB ogbn-products"),
        ),
        _profile(
            "arxiv",
            nodes=169_343,
            edges=1_166_243,
            rows=169_343,
            dim=128,
            train=90_941,
            classes=40,
            curves={"degree": _power_law(0.45)},
            source=_ASSUMED.format(a=0.45, sizes="OGB ogbn-arxiv"),
        ),
        _profile(
            "reddit",
            nodes=232_965,
            edges=114_615_892,
            rows=232_965,
            dim=602,
            train=153_431,
            classes=41,
            curves={"degree": _power_law(0.45)},
            source=_ASSUMED.format(a=0.45, sizes="Reddit (GraphSAGE paper; PyG/DGL)"),
        ),
    )
}


def builtin_profile(name: str) -> DatasetProfile:
    """A built-in profile by name; unknown names list close matches.

    Args:
        name: A built-in dataset's name (`planner datasets` lists them), in any case, as requests
            accept it.
    """
    profile = BUILTIN.get(canonical_dataset_name(name))
    if profile is None:
        raise NotFoundError("dataset", name, BUILTIN)
    return profile
