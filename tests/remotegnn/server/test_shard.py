"""A memory rank serves only from a copy that holds its rows: a part staged for another rank or
layout, or a sampling learner's structure-only copy, is refused before any row is read."""

from __future__ import annotations

import shutil

import pytest

from contracts.shards import ShardLayout
from foundation.fileio import write_model
from remotegnn.errors import DatasetError
from remotegnn.server.shard import check_staged
from remotegnn.store import GraphDataset
from remotegnn.store.part import SHARD_FILE, manifest_of


def _staged(rmat, tmp_path, **fields) -> GraphDataset:
    """A copy of ``rmat`` whose shard.json says it is part 1 of 2, striped (or ``fields``)."""
    copy = tmp_path / "copy"
    shutil.copytree(rmat.path, copy)
    manifest = manifest_of(rmat.meta, "striped", 2).model_copy(update={"index": 1, "features_blake2b": "0" * 64})
    write_model(copy / SHARD_FILE, manifest.model_copy(update=fields))
    return GraphDataset.open(copy)


def test_a_part_serves_its_own_rank_and_layout_only(rmat, tmp_path):
    part = _staged(rmat, tmp_path)
    striped = ShardLayout.of("striped", 2, rmat.meta.num_nodes, rmat.meta.row_bytes)
    check_staged(part, striped, 1)
    with pytest.raises(DatasetError, match=r"holds part 1 of 2 \(striped\), but this rank serves part 0 of 2"):
        check_staged(part, striped, 0)
    modulo = ShardLayout.of("modulo", 2, rmat.meta.num_nodes, rmat.meta.row_bytes)
    with pytest.raises(DatasetError, match=r"part 1 of 2 \(modulo\)"):
        check_staged(part, modulo, 1)
    check_staged(rmat, modulo, 0)  # a whole copy serves any layout


def test_a_structure_only_copy_serves_no_rows(rmat, tmp_path):
    learner_copy = _staged(rmat, tmp_path, index=None, structure_only=True)
    striped = ShardLayout.of("striped", 2, rmat.meta.num_nodes, rmat.meta.row_bytes)
    with pytest.raises(DatasetError, match="structure alone"):
        check_staged(learner_copy, striped, 0)
