"""SliceGCN's distributed procedure (ranks as threads, every byte counted) against the reference."""

from __future__ import annotations

import pytest

from foundation.errors import UsageError
from fullgraph.exchange.options import ExchangeOptions
from fullgraph.slicegcn.config import SliceConfig
from fullgraph.slicegcn.slicing import write_slices
from fullgraph.slicegcn.training import train_local, train_reference

VARIANTS = [
    {"parts": 1},
    {"parts": 2},
    {"parts": 3, "encoding": True},
    {"parts": 3, "fusion": True},
    {"parts": 2, "encoding": True, "fusion": True},
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: SliceConfig(**v).variant + f"-p{v['parts']}")
def test_the_distributed_run_gives_the_references_scores_epoch_by_epoch(graph, variant):
    config = SliceConfig(epochs=4, hidden=12, layers=2, **variant)
    reference = train_reference(graph.path, config)
    distributed = train_local(graph.path, config)
    assert [e.loss for e in distributed.epochs] == [e.loss for e in reference.epochs]
    assert [(e.val, e.test) for e in distributed.epochs] == [(e.val, e.test) for e in reference.epochs]
    assert distributed.parameters == reference.parameters


@pytest.mark.parametrize("variant", [{"parts": 2}, {"parts": 3, "encoding": True, "fusion": True}])
def test_over_udp_slicegcn_trains_to_the_bit_as_over_queues(graph, variant):
    config = SliceConfig(epochs=3, hidden=12, layers=2, **variant)
    queues = train_local(graph.path, config)
    udp = train_local(graph.path, config, exchange=ExchangeOptions(exchange="udp"))
    assert udp.exchange == "udp" and queues.exchange == "mpi"
    assert [(e.loss, e.val, e.test) for e in udp.epochs] == [(e.loss, e.val, e.test) for e in queues.epochs]
    assert [t.total() for t in udp.traffic] == [t.total() for t in queues.traffic]
    assert all(t.wire is not None and t.wire.datagrams_sent > 0 for t in udp.traffic)


def test_over_pinch_slicegcn_trains_as_over_queues_to_fixed_point_rounding(graph):
    config = SliceConfig(parts=3, epochs=3, hidden=12, layers=2, fusion=True)
    queues = train_local(graph.path, config)
    pinch = train_local(graph.path, config, exchange=ExchangeOptions(exchange="pinch"))
    assert pinch.exchange == "pinch"
    assert [e.loss for e in pinch.epochs] == pytest.approx([e.loss for e in queues.epochs], rel=1e-5)
    assert [t.total() for t in pinch.traffic] == [t.total() for t in queues.traffic]
    # the scoring rows travel as fixed-point records, summed in user space (ranks share loopback)
    assert sum(t.wire.datagrams_received for t in pinch.traffic if t.wire) > 0


def test_bytes_per_epoch_are_the_rows_each_pass_needs(graph):
    config = SliceConfig(parts=3, epochs=2, hidden=12, layers=2)
    result = train_local(graph.path, config)
    train, evaluation = (len(graph.split("train")), len(graph.split("val")) + len(graph.split("test")))
    width = 4  # ceil(12 / 3) float32 columns
    for rank in range(3):
        # out: the training rows, then the validation and test rows; in: the training rows' gradient
        assert result.bytes_per_epoch(rank, "sent") == pytest.approx((train + evaluation) * width * 4 + 24 / 2)
        assert result.bytes_per_epoch(rank, "received") == train * width * 4
    learner = result.bytes_per_epoch(3, "received")
    assert learner == pytest.approx(3 * ((train + evaluation) * width * 4 + 24 / 2))
    assert all(t.compute_s > 0 for t in result.times) and len(result.times) == 3


def test_feature_fusion_sends_each_rank_its_fused_slice_and_takes_its_gradient(graph):
    plain = train_local(graph.path, SliceConfig(parts=2, epochs=2, hidden=8, layers=1))
    fused = train_local(graph.path, SliceConfig(parts=2, epochs=2, hidden=8, layers=1, fusion=True))
    n, columns = graph.meta.num_nodes, 5  # ceil(10 / 2) fused columns per rank
    extra_in = fused.bytes_per_epoch(0, "received") - plain.bytes_per_epoch(0, "received")
    assert extra_in == pytest.approx(2 * n * columns * 4 + 8 / 2)  # train and scoring slices, and the width
    extra_out = fused.bytes_per_epoch(0, "sent") - plain.bytes_per_epoch(0, "sent")
    assert extra_out == n * columns * 4  # the fused slice's gradient


def test_a_sliced_dataset_trains_as_slicing_on_the_fly_does(graph, tmp_path):
    config = SliceConfig(parts=3, epochs=3, hidden=12, layers=2)
    write_slices(graph, tmp_path / "sliced", 3)
    from_parts = train_local(graph.path, config, slices=tmp_path / "sliced")
    on_the_fly = train_local(graph.path, config)
    assert [e.loss for e in from_parts.epochs] == [e.loss for e in on_the_fly.epochs]
    with pytest.raises(UsageError, match="holds 3 slices"):
        train_local(graph.path, SliceConfig(parts=2, epochs=1), slices=tmp_path / "sliced")


def test_two_classes_are_scored_by_roc_auc_and_training_learns(binary):
    result = train_reference(binary.path, SliceConfig(parts=2, epochs=60, hidden=16, layers=2, lr=0.01, dropout=0.2))
    assert result.metric == "roc_auc" and result.variant == "SliceGCN"
    assert result.test > 0.8  # the synthetic labels are learnable from the features (signal 1.0)
    assert result.epochs[result.best_epoch].val == result.val
