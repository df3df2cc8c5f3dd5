"""fullgraph.exchange.pinch.endpoint: the udp and pinch exchanges as training fabrics (ranks as threads on loopback)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from fullgraph.exchange.endpoint import CommError
from fullgraph.exchange.fabrics import UdpThreadFabric
from fullgraph.exchange.ledger import WireStats
from fullgraph.exchange.options import ExchangeOptions
from fullgraph.exchange.pinch.endpoint import PinchEndpoint, UdpEndpoint, _decode
from fullgraph.exchange.pinch.fixedpoint import SCALE_BITS, chunks, dequantize, quantize, to_records
from fullgraph.exchange.pinch.wire import AGGREGATE, CHUNK, R_OVERFLOW, R_SATURATED
from fullgraph.partitioner import write_partition
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.training import train_local
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

FAST = {"model": "sage", "hidden": 8, "rounds": 3}
JOIN_S = 30.0


@pytest.fixture(scope="module")
def partition(tmp_path_factory) -> Path:
    """A 400-node R-MAT graph with 12-dim features and 3 classes, in 3 random parts."""
    root = tmp_path_factory.mktemp("pinch-endpoint")
    synth(
        SynthSpec(nodes=400, edges=2_000, dim=12, classes=3, seed=5, train=0.3, val=0.2, test=0.5),
        root / "graph",
        progress=False,
    )
    write_partition(GraphDataset.open(root / "graph"), root / "parts", 3, "random", seed=1)
    return root / "parts"


@pytest.fixture(scope="module")
def queues(partition) -> dict[str, object]:
    """The reference: each method trained through the in-process queues."""
    return {method: train_local(partition, TrainConfig(method=method, **FAST)) for method in ("standard", "retexo")}


def losses(result) -> list[float]:
    return [r.loss for s in result.stages for r in s.rounds]


def metrics(result) -> list:
    return [s.rounds for s in result.stages]


# -- training over udp and pinch -----------------------------------------------------------------
@pytest.mark.parametrize("method", ["standard", "retexo"])
def test_udp_trains_exactly_as_the_queues_do(partition, queues, method):
    reference = queues[method]
    result = train_local(partition, TrainConfig(method=method, **FAST), exchange=ExchangeOptions(exchange="udp"))
    assert result.exchange == "udp" and reference.exchange == "mpi"
    assert metrics(result) == metrics(reference)  # every round's loss and accuracies, to the bit
    assert [s.best_round for s in result.stages] == [s.best_round for s in reference.stages]
    assert result.test_acc == reference.test_acc
    assert result.measured == reference.measured
    assert result.measured_over_predicted == 1.0
    assert [t.total() for t in result.traffic] == [t.total() for t in reference.traffic]
    # and so do the counts per (stage, layer, kind), and per round
    for mine, theirs in zip(result.traffic, reference.traffic):
        assert [(e.stage, e.layer, e.kind, e.sent, e.received) for e in mine.entries] == [
            (e.stage, e.layer, e.kind, e.sent, e.received) for e in theirs.entries
        ]
        assert mine.round_bytes == theirs.round_bytes


@pytest.mark.parametrize("method", ["standard", "retexo"])
def test_pinch_trains_within_fixed_point_error_with_the_same_bytes(partition, queues, method):
    reference = queues[method]
    result = train_local(partition, TrainConfig(method=method, **FAST), exchange=ExchangeOptions(exchange="pinch"))
    assert result.exchange == "pinch"
    assert [len(s.rounds) for s in result.stages] == [len(s.rounds) for s in reference.stages]
    assert losses(result) == pytest.approx(losses(reference), rel=1e-4)
    assert result.measured == reference.measured
    assert [t.total() for t in result.traffic] == [t.total() for t in reference.traffic]


@pytest.mark.parametrize("exchange", ["udp", "pinch"])
def test_every_rank_reports_what_its_datagrams_cost(partition, queues, exchange):
    result = train_local(partition, TrainConfig(method="standard", **FAST), exchange=ExchangeOptions(exchange=exchange))
    assert [t.rank for t in result.traffic] == [0, 1, 2, 3]
    assert all(t.wire is None for t in queues["standard"].traffic)
    for t in result.traffic:
        wire = t.wire
        assert isinstance(wire, WireStats)
        assert wire.datagrams_sent > 0 and wire.datagrams_received > 0 and wire.readies_sent > 0
        assert wire.wire_bytes_sent > 0 and wire.socket_calls > 0
        assert wire.kernel_records == 0  # threads sum in user space
        # every payload byte this rank sent crossed the wire, with a header per datagram
        assert wire.wire_bytes_sent > sum(e.sent for e in t.entries)
    master = result.traffic[-1].wire
    assert master is not None and master.receive_cpu_s > 0


@pytest.mark.parametrize("exchange", ["udp", "pinch"])
def test_a_failing_worker_is_an_error_not_a_hang(partition, monkeypatch, exchange):
    import fullgraph.retexo.training as training

    def broken(self, params):
        if self.part.index == 1:
            raise RuntimeError("worker 1 lost its disk")
        return original(self, params)

    original = training._Worker.receive_weights
    monkeypatch.setattr(training._Worker, "receive_weights", broken)
    with pytest.raises(RuntimeError, match="lost its disk"):
        train_local(partition, TrainConfig(method="standard", **FAST), exchange=ExchangeOptions(exchange=exchange))


def test_mpi_as_the_exchange_is_the_queues(partition, queues):
    result = train_local(partition, TrainConfig(method="retexo", **FAST), exchange=ExchangeOptions())
    assert result.exchange == "mpi" and metrics(result) == metrics(queues["retexo"])


# -- endpoints -----------------------------------------------------------------------------------
class Pair:
    """A worker (rank 0) and its master (rank 1) of a UdpThreadFabric; ``side`` runs in a thread."""

    def __init__(self, exchange: str):
        self.fabric = UdpThreadFabric(1, ExchangeOptions(exchange=exchange))
        self.worker, self.master = self.fabric.endpoint(0), self.fabric.endpoint(1)

    def side(self, target) -> tuple[threading.Thread, list[BaseException]]:
        raised: list[BaseException] = []

        def go() -> None:
            try:
                target()
            except BaseException as exc:
                raised.append(exc)

        thread = threading.Thread(target=go)
        thread.start()
        return thread, raised


@pytest.fixture
def pair():
    made: list[Pair] = []

    def make(exchange: str) -> Pair:
        made.append(Pair(exchange))
        return made[-1]

    yield make
    for p in made:
        p.fabric.abort()
        p.fabric.release()


def test_the_fabric_builds_the_endpoint_each_exchange_asks_for(pair):
    udp, pinch = pair("udp"), pair("pinch")
    assert type(udp.worker) is UdpEndpoint and type(udp.master) is UdpEndpoint
    assert isinstance(pinch.worker, PinchEndpoint) and not pinch.worker.kernel_broadcast
    assert udp.worker.transport.aggregation is None
    assert pinch.master.transport.aggregation is not None and pinch.master.transport.aggregation.growable
    assert udp.worker.transport.addresses[1] == udp.master.transport.sock.getsockname()  # one address book
    assert udp.worker.workers == 1 and udp.master.rank == udp.master.master == 1


@pytest.mark.parametrize("exchange", ["udp", "pinch"])
def test_a_pair_passes_weights_and_sums_gradients(pair, exchange):
    p = pair(exchange)
    rng = np.random.default_rng(0)
    weights = rng.normal(size=1000).astype(np.float32)
    grads = rng.normal(size=777).astype(np.float32)
    grads[: 20 * CHUNK] *= 0.1  # small records too, which cross at shift 0
    got = np.empty_like(weights)

    def worker() -> None:
        p.worker.recv(1, got, "weights")
        p.worker.send(1, grads, "model_gradients")
        p.worker.close()

    thread, raised = p.side(worker)
    p.master.broadcast(weights, "weights")
    total = p.master.reduce(np.empty_like(grads), "model_gradients")
    p.master.close()
    thread.join(JOIN_S)
    assert not thread.is_alive() and not raised
    assert got.tobytes() == weights.tobytes()
    if exchange == "udp":
        assert total.tobytes() == grads.tobytes()
    else:  # through fixed point: the nearest multiple of its record's step 2^(shift - 32), as float32
        q, saturated = quantize(grads)
        assert not saturated.any()
        assert total.tolist() == (q / 2.0**32).astype(np.float32).tolist()
        shift = np.repeat(to_records(grads)["shift"], CHUNK)[: grads.size]
        assert (shift == 0).any() and (shift > 0).any()  # plain and shifted records both crossed
        half_step = np.exp2(shift - SCALE_BITS - 1.0)
        assert (np.abs(dequantize(q) - grads) <= half_step).all()
        # the cast to float32 moves it no further than the float32 grad it came from is
        assert (np.abs(total.astype(np.float64) - grads) <= 2 * half_step).all()
    assert p.master.ledger.report().total() == p.worker.ledger.report().total() == weights.nbytes + grads.nbytes


def test_pinch_refuses_float64_rows(pair):
    p = pair("pinch")
    with pytest.raises(CommError, match="the pinch exchange carries float32 model_gradients, not float64"):
        p.worker.send(1, np.zeros(10), "model_gradients")
    with pytest.raises(CommError, match="carries float32 representations, not float64"):
        p.worker.exchange([np.zeros(0), np.zeros((2, 3))], [np.zeros(0), np.zeros(0)], "representations")
    assert not p.worker.transport._outgoing  # nothing was queued


def test_pinch_reports_saturated_gradients_instead_of_summing_them(pair):
    p = pair("pinch")
    grads = np.ones(40, dtype=np.float32)
    grads[17] = np.inf
    thread, raised = p.side(lambda: p.worker.send(1, grads, "model_gradients"))
    with pytest.raises(CommError, match="rank 1: model_gradients held values beyond the fixed-point range"):
        p.master.reduce(np.empty_like(grads), "model_gradients")
    thread.join(JOIN_S)
    assert not thread.is_alive() and not raised


def test_a_message_of_the_wrong_size_is_refused(pair):
    p = pair("udp")
    thread, raised = p.side(lambda: p.worker.send(1, np.zeros(3, dtype=np.float32), "weights"))
    with pytest.raises(CommError, match="rank 1: rank 0 sent bytes past the 8-byte message"):
        p.master.recv(0, np.zeros(2, dtype=np.float32), "weights")
    thread.join(JOIN_S)
    assert not thread.is_alive() and not raised


@pytest.mark.parametrize("exchange", ["udp", "pinch"])
def test_an_aborted_fabric_wakes_a_waiting_receiver(pair, exchange):
    p = pair(exchange)
    thread, raised = p.side(lambda: p.master.reduce(np.zeros(64, dtype=np.float32), "model_gradients"))
    p.fabric.abort()
    thread.join(JOIN_S)
    assert not thread.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], CommError) and "another rank failed" in str(raised[0])


# -- decoding sums ---------------------------------------------------------------------------------
def aggregates(values: np.ndarray, contributions: int) -> np.ndarray:
    out = np.zeros(chunks(values.size), dtype=AGGREGATE)
    q, _ = quantize(values.reshape(-1))
    padded = np.zeros(out.size * CHUNK, dtype=np.int64)
    padded[: values.size] = q * contributions
    out["sum"] = padded.reshape(-1, CHUNK)
    out["count"] = contributions
    return out


def test_decode_turns_sums_back_into_floats():
    values = np.linspace(-3, 3, 50, dtype=np.float32).reshape(10, 5)
    out = np.empty_like(values)
    _decode(aggregates(values, 3), 3, out, 2, "representations")
    np.testing.assert_array_equal(out, 3 * values)
    empty = np.empty((0, 4), dtype=np.float32)
    _decode(np.zeros(0, dtype=AGGREGATE), 1, empty, 0, "features")  # nothing to decode


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (R_SATURATED, "rank 2: features held values beyond the fixed-point range"),
        (R_OVERFLOW, "rank 2: more than 256 contributions to one sum of features"),
        (R_SATURATED | R_OVERFLOW, "beyond the fixed-point range"),
    ],
)
def test_decode_refuses_flagged_sums(flag, message):
    a = aggregates(np.ones(40, dtype=np.float32), 1)
    a["flags"][1] = flag
    with pytest.raises(CommError, match=message):
        _decode(a, 1, np.empty(40, dtype=np.float32), 2, "features")


def test_decode_refuses_a_sum_with_the_wrong_number_of_contributions():
    a = aggregates(np.ones(40, dtype=np.float32), 3)
    a["count"][2] = 2
    with pytest.raises(CommError, match="rank 0: model_gradients sums have 2-3 contributions, 3 expected"):
        _decode(a, 3, np.empty(40, dtype=np.float32), 0, "model_gradients")
    with pytest.raises(CommError, match="sums have 3-3 contributions, 4 expected"):
        _decode(aggregates(np.ones(40, dtype=np.float32), 3), 4, np.empty(40, dtype=np.float32), 0, "model_gradients")


# -- options ---------------------------------------------------------------------------------------
def test_exchange_options_validate_and_feed_the_transport():
    options = ExchangeOptions(exchange="pinch", mtu=9000, peer_timeout_s=2.5)
    assert options.transport().mtu == 9000 and options.transport().peer_timeout_s == 2.5
    assert ExchangeOptions().exchange == "mpi" and ExchangeOptions().kernel
    for bad in ({"exchange": "tcp"}, {"port": 65535}, {"mtu": 100}, {"peer_timeout_s": 0}, {"bogus": 1}):
        with pytest.raises(ValidationError):
            ExchangeOptions(**bad)
    assert ExchangeOptions.model_validate_json(options.model_dump_json()) == options
