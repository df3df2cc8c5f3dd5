"""fullgraph.retexo.training over threads: exact partitioned training, counted bytes, failures."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from foundation.errors import UsageError
from fullgraph.exchange.endpoint import CommError
from fullgraph.exchange.kinds import KINDS
from fullgraph.exchange.local import LocalFabric
from fullgraph.part import load_part, random_split_masks
from fullgraph.partitioner import open_partition
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.training import RoundMetrics, _stage, train_local
from remotegnn.store import GraphDataset

FAST = {"hidden": 8, "heads": 2, "rounds": 4}


@pytest.mark.parametrize("method", ["standard", "retexo"])
@pytest.mark.parametrize(("model", "normalize"), [("gcn", False), ("sage", False), ("gat", False), ("sage", True)])
def test_partitioned_training_equals_training_on_the_whole_graph(partitions, method, model, normalize):
    # Without dropout, exchanging the halo rows (and, standard, their gradients) and weighting the
    # workers' gradients by their training nodes must reproduce one process on the whole graph.
    config = TrainConfig(method=method, model=model, dropout=0.0, normalize=normalize, **FAST)
    whole = train_local(partitions["whole"], config)
    for name in ("random3", "metis2"):
        split = train_local(partitions[name], config)
        for a, b in zip(whole.stages, split.stages):
            assert [r.loss for r in a.rounds] == pytest.approx([r.loss for r in b.rounds], abs=1e-5)
            assert [r.val_acc for r in a.rounds] == [r.val_acc for r in b.rounds]
        assert split.test_acc == whole.test_acc


@pytest.mark.parametrize("method", ["standard", "retexo"])
def test_every_byte_of_eq2_is_measured(partitions, method):
    result = train_local(partitions["random3"], TrainConfig(method=method, model="sage", **FAST))
    expected = result.predicted.standard if method == "standard" else result.predicted.lazy
    assert result.measured.message_passing == expected.message_passing > 0
    assert result.measured.aggregation == expected.aggregation > 0
    assert result.measured_over_predicted == 1.0
    workers, master = result.traffic[:3], result.traffic[3]
    kinds = {e.kind for t in workers for e in t.entries}
    assert {e.layer for t in workers for e in t.entries if e.kind in ("features", "representations")} == {1, 2}
    if method == "retexo":
        assert not kinds & {"representation_gradients", "evaluation"}  # one exchange per layer, nothing else
    else:
        assert result.measured.evaluation > 0 and "representation_gradients" in kinds
    # What workers send each other they receive; what the master sends the workers receive.
    for kind in ("features", "representations"):
        sent = sum(e.sent for t in workers for e in t.entries if e.kind == kind)
        assert sent == sum(e.received for t in workers for e in t.entries if e.kind == kind) > 0
    weights_received = sum(e.received for t in workers for e in t.entries if e.kind == "weights")
    assert weights_received == master.total(("weights",)) > 0
    assert all(len(t.round_bytes[stage]) == FAST["rounds"] for t in workers for stage in t.round_bytes)


def test_retexo_trains_layer_by_layer_and_reports_each(partitions):
    result = train_local(partitions["metis2"], TrainConfig(method="retexo", model="gcn", layers=3, **FAST))
    assert [s.stage for s in result.stages] == [1, 2, 3]
    for stage in result.stages:
        best = stage.rounds[stage.best_round]
        assert best.val_acc == max(r.val_acc for r in stage.rounds) and stage.test_acc == best.test_acc
    assert result.test_acc == result.stages[-1].test_acc
    layers = {e.layer for t in result.traffic[:2] for e in t.entries if e.kind == "representations"}
    assert layers == {2, 3}  # layer 1's input is the features, exchanged once


def test_the_best_round_is_the_first_with_the_best_validation_accuracy():
    rounds = [
        RoundMetrics(round=i, loss=1.0, train_acc=0, val_acc=v, test_acc=i / 10)
        for i, v in enumerate([0.1, 0.5, 0.5, 0.2])
    ]
    stage = _stage(1, rounds, 0.0)
    assert (stage.best_round, stage.test_acc) == (1, 0.1)


def test_a_random_split_is_the_same_for_any_partition(partitions):
    def train_nodes(root):
        meta = open_partition(root)
        nodes = []
        for p in range(meta.parts):
            part = load_part(root, p, meta)
            nodes += part.global_ids[: part.inner][random_split_masks(part, 7, 0.2, 0.1)["train"].numpy()].tolist()
        return sorted(nodes)

    whole = train_nodes(partitions["whole"])
    assert whole == train_nodes(partitions["random3"]) == train_nodes(partitions["metis2"])
    assert 0.1 < len(whole) / 600 < 0.3


def test_a_failing_worker_is_an_error_not_a_hang(partitions, monkeypatch):
    import fullgraph.retexo.training as training

    def broken(self, params):
        if self.part.index == 1:
            raise RuntimeError("worker 1 lost its disk")
        return original(self, params)

    original = training._Worker.receive_weights
    monkeypatch.setattr(training._Worker, "receive_weights", broken)
    with pytest.raises(RuntimeError, match="lost its disk"):
        train_local(partitions["random3"], TrainConfig(**FAST))


def test_a_dataset_without_a_validation_split_asks_for_a_random_split(small, tmp_path):
    from fullgraph.partitioner import write_partition
    from remotegnn.store import DatasetWriter

    bare = tmp_path / "bare"
    edges = small.edge_index()
    with DatasetWriter(bare, name="bare") as writer:
        writer.write_graph(edges[0], edges[1], small.meta.num_nodes)
        writer.features(small.meta.feature_dim)[:] = small.features
        writer.write_labels(np.asarray(small.labels))
        writer.write_split("train", np.asarray(small.split("train")))
        writer.commit()
    write_partition(GraphDataset.open(bare), tmp_path / "parts", 2)
    with pytest.raises(UsageError, match="no val, test split: train with --split random"):
        train_local(tmp_path / "parts", TrainConfig(**FAST))
    assert train_local(tmp_path / "parts", TrainConfig(split="random", **FAST)).test_acc > 0


def test_an_aborted_fabric_wakes_a_waiting_receiver():
    fabric = LocalFabric(1)
    fabric.abort()
    with pytest.raises(CommError, match="another rank failed"):
        fabric.endpoint(0).recv(1, np.zeros(1), "weights")


def test_a_message_of_the_wrong_size_is_refused():
    fabric = LocalFabric(1)
    fabric.endpoint(1).send(0, np.zeros(3, dtype=np.float32), "weights")
    with pytest.raises(CommError, match="12 bytes, 8 expected"):
        fabric.endpoint(0).recv(1, np.zeros(2, dtype=np.float32), "weights")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model": "gat", "hidden": 10, "heads": 4}, "multiple of heads"),
        ({"train_fraction": 0.7, "val_fraction": 0.3}, "leave nodes for test"),
        ({"method": "bns"}, "standard"),
        ({"rounds": 0}, "greater than or equal to 1"),
    ],
)
def test_bad_configurations_name_the_field(fields, message):
    with pytest.raises(ValidationError, match=message):
        TrainConfig(**fields)


def test_every_kind_has_its_own_tag():
    assert len(set(KINDS)) == len(KINDS)


@pytest.mark.parametrize("method", ["standard", "retexo"])
def test_patience_stops_each_stage_once_validation_stops_improving(partitions, method):
    """With a learning rate too small to change anything, validation accuracy never improves on
    round 0: patience 2 stops every stage after round 2, and every worker stopped with the master."""
    config = TrainConfig(method=method, model="sage", lr=1e-12, patience=2, **{**FAST, "rounds": 50})
    result = train_local(partitions["random3"], config)
    assert result.stages and all(len(s.rounds) == 3 and s.best_round == 0 for s in result.stages)
    for t in result.traffic[:3]:
        assert all(len(rounds) == 3 for rounds in t.round_bytes.values())
    weights = sum(e.received for t in result.traffic[:3] for e in t.entries if e.kind == "weights")
    assert weights == result.traffic[3].total(("weights",))  # no weights sent that nobody took


def test_patience_keeps_the_best_rounds_weights_and_matches_the_whole_graph(partitions):
    """Stopping is decided on global metrics, so a partition stops where the whole graph does, and
    RETEXO keeps each layer's best round, as without patience."""
    config = TrainConfig(method="retexo", model="gcn", dropout=0.0, patience=3, **{**FAST, "rounds": 40})
    whole, split = train_local(partitions["whole"], config), train_local(partitions["metis2"], config)
    assert [len(s.rounds) for s in whole.stages] == [len(s.rounds) for s in split.stages]
    assert any(len(s.rounds) < 40 for s in whole.stages)
    assert split.test_acc == whole.test_acc == whole.stages[-1].test_acc
    for stage in split.stages:
        assert stage.rounds[-1].round - stage.best_round == 3 or len(stage.rounds) == 40


def test_patience_waits_for_min_rounds(partitions):
    """A plateau at the start is not convergence: patience counts only after min_rounds."""
    config = TrainConfig(method="retexo", model="sage", lr=1e-12, patience=2, min_rounds=5, **{**FAST, "rounds": 50})
    result = train_local(partitions["random3"], config)
    assert all(len(s.rounds) == 5 for s in result.stages)
    with pytest.raises(ValidationError, match="min_rounds"):
        TrainConfig(rounds=10, min_rounds=11)


def _count_cached_passes(monkeypatch) -> list[int]:
    """Patch GraphLayer.forward to count the passes that were handed a cached aggregate."""
    from fullgraph.retexo.models import GraphLayer

    calls = [0]
    forward = GraphLayer.forward

    def counting(self, x, graph, aggregate=None):
        calls[0] += aggregate is not None
        return forward(self, x, graph, aggregate)

    monkeypatch.setattr(GraphLayer, "forward", counting)
    return calls


@pytest.mark.parametrize("dropout", [0.3, 0.0])
@pytest.mark.parametrize("model", ["sage", "gcn"])
def test_the_aggregate_cache_trains_as_without_it(partitions, monkeypatch, model, dropout):
    # Each RETEXO layer's frozen input is aggregated once: every scoring pass, the pass that makes
    # the next layer's input and (without dropout) every training pass reuse it. GraphSAGE gives
    # the same numbers to the bit; GCN applies its weights after the sum, so to rounding.
    config = TrainConfig(model=model, dropout=dropout, layers=2, **FAST)
    calls = _count_cached_passes(monkeypatch)
    cached = train_local(partitions["random3"], config)
    workers, rounds = cached.workers, config.rounds
    per_layer = rounds * (2 if dropout == 0.0 else 1)
    assert calls[0] == workers * (2 * per_layer + 1)
    plain = train_local(partitions["random3"], config.model_copy(update={"aggregate_cache": False}))
    assert calls[0] == workers * (2 * per_layer + 1)  # nothing cached when it is off
    for a, b in zip(cached.stages, plain.stages):
        if model == "sage":
            assert a.rounds == b.rounds
        else:
            assert [r.loss for r in a.rounds] == pytest.approx([r.loss for r in b.rounds], abs=1e-5)
    assert cached.measured == plain.measured


def test_gat_and_standard_training_cache_nothing(partitions, monkeypatch):
    calls = _count_cached_passes(monkeypatch)
    train_local(partitions["metis2"], TrainConfig(model="gat", **FAST))
    train_local(partitions["metis2"], TrainConfig(method="standard", model="sage", **FAST))
    assert calls[0] == 0
