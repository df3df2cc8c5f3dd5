"""Cache policies on real structure: presampling wins where training nodes are localised."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from remotegnn.cache.hitrate import hit_rate_curve
from remotegnn.cache.policy import Rankings, access_counts, degree_ranking, presample_ranking
from remotegnn.store import GraphDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from trainsets import bfs_ball, uniform_nodes  # the benchmarks' helper, imported as they import it


@pytest.fixture(scope="module")
def cora(shared_datasets, tmp_path_factory) -> GraphDataset:
    from remotegnn.convert import from_planetoid

    path = tmp_path_factory.mktemp("real") / "cora"
    from_planetoid(shared_datasets / "planetoid", path, name="cora")
    return GraphDataset.open(path)


def _hit_rates(dataset, seeds, cache_fraction):
    counts = access_counts(dataset, seeds, [15, 10, 5], batch_size=64, seed=101)  # the scored epoch
    presample = presample_ranking(dataset, seeds, [15, 10, 5], batch_size=64, seed=7)  # another epoch
    return (
        hit_rate_curve(counts, degree_ranking(dataset.degree), [cache_fraction])[0],
        hit_rate_curve(counts, presample, [cache_fraction])[0],
    )


def test_presample_beats_degree_on_a_clustered_training_set(cora):
    seeds = bfs_ball(cora, 54, seed=0)  # 2% of Cora's nodes, around one root
    degree, presample = _hit_rates(cora, seeds, 0.30)
    assert presample > degree + 0.10


def test_policies_are_close_on_a_uniform_training_set_with_a_large_cache(cora):
    # With seeds spread everywhere, degree ordering is near what presampling learns.
    degree, presample = _hit_rates(cora, uniform_nodes(cora.meta.num_nodes, 1000, seed=0), 0.50)
    assert abs(presample - degree) < 0.10
    assert degree > 0.5


def test_auto_keeps_presample_on_a_clustered_training_set(cora):
    seeds = bfs_ball(cora, 54, seed=0)
    rankings = Rankings(cora, seeds, (15, 10, 5), batch_size=64, seed=7)
    policy, ranking = rankings.choose("auto", cora.meta.num_nodes * 3 // 10)
    assert policy == "presample" and np.array_equal(ranking, rankings.ranking("presample"))


def test_auto_keeps_whichever_serves_more_of_the_probe_epoch(cora):
    seeds = uniform_nodes(cora.meta.num_nodes, 1000, seed=0)
    rankings = Rankings(cora, seeds, (15, 10, 5), batch_size=64, seed=7)
    capacity = cora.meta.num_nodes // 10
    counts = rankings.probe_counts()
    served = {p: counts[rankings.ranking(p)[:capacity]].sum() for p in ("degree", "presample")}
    policy, _ = rankings.choose("auto", capacity)
    assert served[policy] == max(served.values())


def test_a_ranking_without_excluded_nodes_keeps_its_order(cora):
    rankings = Rankings(cora, uniform_nodes(cora.meta.num_nodes, 500, seed=1), (10, 5), batch_size=64)
    exclude = np.zeros(cora.meta.num_nodes, dtype=bool)
    exclude[rankings.ranking("degree")[:100]] = True
    _, ranking = rankings.choose("degree", 50, exclude=exclude)
    assert np.array_equal(ranking, rankings.ranking("degree")[100:])
