"""fullgraph.exchange.pinch.transport: receiver-driven reliable UDP between ranks, on real loopback sockets.

Every rank is a :class:`Transport` in its own thread; the threads are joined with timeouts, so a
protocol that hangs fails the test instead of the run.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from fullgraph.exchange.endpoint import CommError
from fullgraph.exchange.pinch.aggregate import AggregateArrays, Aggregation
from fullgraph.exchange.pinch.fixedpoint import chunks, quantize
from fullgraph.exchange.pinch.transport import Transport, TransportOptions
from fullgraph.exchange.pinch.wire import CHUNK, PacketType, parse_header, raw_per_packet

JOIN_S = 30.0  # no exchange here takes more than a fraction of this
RAW_SIZES = [1, 1440, 1441, 1_000_003]  # one byte, one full datagram, one more byte, ~700 datagrams
PIECE = 1 << 16  # records per FIXED message: more than any test sends


class Ranks:
    """``n`` transports on free loopback ports, sharing one abort event and one finish line."""

    def __init__(self, n: int, options: TransportOptions | None = None, transport=Transport, fixed=(), **kwargs):
        self.aborted = threading.Event()
        addresses = [("127.0.0.1", 0)] * n
        self.transports = [
            transport(
                r,
                addresses,
                options or TransportOptions(),
                Aggregation(AggregateArrays.in_memory(CHUNK), growable=True) if r in fixed else None,
                aborted=self.aborted,
                **kwargs,
            )
            for r in range(n)
        ]
        self.finished = 0
        self.lock = threading.Lock()

    def run(self, work: dict[int, Callable[[Transport], object]], timeout: float = JOIN_S) -> dict[int, object]:
        """Run ``work[r](transport r)`` for every rank in a thread, then drain as the endpoints do;
        re-raise the first failure (a failed rank aborts the others)."""
        results: dict[int, object] = {}
        errors: dict[int, BaseException] = {}

        def rank(r: int) -> None:
            t = self.transports[r]
            arrived = False

            def everyone_done() -> bool:
                nonlocal arrived
                if not arrived:
                    with self.lock:
                        self.finished += 1
                    arrived = True
                return self.finished >= len(work)

            try:
                results[r] = work[r](t) if r in work else None
                t.drain(everyone_done)
            except BaseException as exc:
                errors[r] = exc
                self.aborted.set()

        threads = [threading.Thread(target=rank, args=(r,), name=f"rank-{r}") for r in work]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in threads):
            self.aborted.set()  # wakes every rank still in a loop
            for thread in threads:
                thread.join(5.0)
            pytest.fail(f"the ranks did not finish in {timeout:g} s")
        if errors:
            first = [errors[r] for r in sorted(errors) if not isinstance(errors[r], CommError)] or list(errors.values())
            raise first[0]
        return results

    def close(self) -> None:
        for t in self.transports:
            t.close()


@pytest.fixture
def ranks():
    made: list[Ranks] = []

    def make(n: int, **kwargs) -> Ranks:
        made.append(Ranks(n, **kwargs))
        return made[-1]

    yield make
    for r in made:
        r.close()


def messages(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [rng.integers(0, 256, size, dtype=np.uint8) for size in RAW_SIZES]
    floats = rng.normal(size=(300, 7)).astype(np.float32)
    floats.reshape(-1)[:4] = [np.nan, -np.inf, -0.0, np.float32(1e-45)]  # bit patterns must survive
    out.append(floats)
    out.append(rng.normal(size=1000))  # float64
    return out


def send_all(dst: int, arrays: list[np.ndarray], kind: int = 1):
    def work(t: Transport) -> None:
        t.complete([t.post_raw(dst, a, kind) for a in arrays])

    return work


def take_all(src: int, like: list[np.ndarray], kind: int = 1):
    def work(t: Transport) -> list[np.ndarray]:
        out = []
        for a in like:
            buffer = np.empty_like(a)
            t.take_raw(src, buffer, kind)
            out.append(buffer)
        return out

    return work


def assert_bit_exact(got: list[np.ndarray], sent: list[np.ndarray]) -> None:
    assert len(got) == len(sent)
    for g, s in zip(got, sent):
        assert g.dtype == s.dtype and g.shape == s.shape
        assert g.tobytes() == s.tobytes()


# -- RAW -----------------------------------------------------------------------------------------
def test_raw_messages_arrive_bit_exact_and_in_order(ranks):
    sent = messages()
    r = ranks(2)
    got = r.run({0: send_all(1, sent), 1: take_all(0, sent)})[1]
    assert_bit_exact(got, sent)  # type: ignore[arg-type]  # take_all's list
    receiver, sender = r.transports[1].stats, r.transports[0].stats
    payload = sum(a.nbytes for a in sent)
    datagrams = sum(max(1, -(-a.nbytes // raw_per_packet(1500))) for a in sent)
    assert datagrams == 1 + 1 + 2 + 695 + 6 + 6
    assert sender.wire_bytes_sent >= payload + 32 * datagrams
    assert sender.retransmitted == 0 and receiver.duplicates == 0
    assert receiver.readies_sent == len(sent) and receiver.datagrams_received >= datagrams
    assert receiver.receive_cpu_s > 0 and sender.socket_calls > 0


def test_the_caller_may_reuse_its_array_once_post_returns(ranks):
    def work(t: Transport) -> None:
        data = np.arange(500, dtype=np.float64)
        handles = [t.post_raw(1, data, 2)]
        data[:] = -1  # before anything was transmitted
        handles.append(t.post_raw(1, data, 2))
        t.complete(handles)

    like = [np.empty(500), np.empty(500)]
    got = ranks(2).run({0: work, 1: take_all(0, like, kind=2)})[1]
    assert_bit_exact(got, [np.arange(500, dtype=np.float64), np.full(500, -1.0)])


def test_an_empty_message_arrives_as_one_empty_datagram(ranks):
    # The training code never posts empty arrays, but the transport takes them.
    sent = [np.zeros(0, dtype=np.float32), np.arange(3, dtype=np.uint8)]
    got = ranks(2).run({0: send_all(1, sent), 1: take_all(0, sent)})[1]
    assert_bit_exact(got, sent)


def test_both_ways_and_between_many_pairs_at_once(ranks):
    # Every rank posts to every other, then takes from every other, then completes: the fabric's
    # exchange pattern (a rank blocked in complete() before its takes would deadlock, as in MPI).
    n = 4
    sent = {(s, d): messages(seed=10 * s + d)[1:4] for s in range(n) for d in range(n) if s != d}

    def work(me: int):
        def go(t: Transport):
            handles = [t.post_raw(d, a, 6) for d in range(n) if d != me for a in sent[(me, d)]]
            got = {}
            for s in range(n):
                if s != me:
                    got[s] = take_all(s, sent[(s, me)], kind=6)(t)
            t.complete(handles)
            return got

        return go

    results = ranks(n).run({me: work(me) for me in range(n)})
    for me in range(n):
        for s, got in results[me].items():  # type: ignore[union-attr]  # work's dict
            assert_bit_exact(got, sent[(s, me)])


def test_a_kind_mismatch_is_reported_as_out_of_step(ranks):
    with pytest.raises(CommError, match="rank 0 sent kind 3 .* kind 4 .* expected: the ranks are out of step"):
        ranks(2).run({0: send_all(1, [np.zeros(10)], kind=3), 1: take_all(0, [np.zeros(10)], kind=4)})


# -- FIXED ---------------------------------------------------------------------------------------
def test_a_fixed_sum_from_three_senders_equals_the_fixed_point_sum(ranks):
    rng = np.random.default_rng(3)
    values = [rng.normal(0, s, (333, 5)).astype(np.float32) for s in (1e-2, 1.0, 1e4)]
    records = chunks(values[0].size)

    def receive(t: Transport) -> np.ndarray:
        return t.take_sum([0, 1, 2], records, 3, PIECE)

    def send(q: int):
        def go(t: Transport) -> None:
            t.complete(t.post_fixed(3, values[q], 3, PIECE))

        return go

    r = ranks(4, fixed={3})
    total = r.run({0: send(0), 1: send(1), 2: send(2), 3: receive})[3]
    expected = sum(quantize(v.reshape(-1))[0] for v in values)
    assert total["sum"].reshape(-1)[: values[0].size].tolist() == expected.tolist()
    assert (total["count"] == 3).all() and not total["flags"].any()
    assert r.transports[3].stats.kernel_records == 0  # summed in user space


@pytest.mark.parametrize("piece", [PIECE, 7, 1])
def test_fixed_rows_of_several_sizes_land_side_by_side(ranks, piece):
    # Cut into messages of ``piece`` records, sender by sender: the receiver puts them together.
    rng = np.random.default_rng(4)
    sizes = {0: 16 * 7, 1: 1, 2: 16 * 25 + 3}
    values = {q: rng.normal(size=n).astype(np.float32) for q, n in sizes.items()}

    def receive(t: Transport) -> np.ndarray:
        return t.take_fixed([(q, chunks(n)) for q, n in sizes.items()], 0, piece)

    def send(q: int):
        return lambda t: t.complete(t.post_fixed(3, values[q], 0, piece))

    total = ranks(4, fixed={3}).run({0: send(0), 1: send(1), 2: send(2), 3: receive})[3]
    base = 0
    for q, n in sizes.items():
        part = total[base : base + chunks(n)]
        assert part["sum"].reshape(-1)[:n].tolist() == quantize(values[q])[0].tolist()
        assert (part["count"] == 1).all()
        base += chunks(n)


def test_fixed_messages_need_an_aggregation(ranks):
    with pytest.raises(CommError, match="rank 1: FIXED messages need an aggregation"):
        ranks(2).run({0: lambda t: None, 1: lambda t: t.take_sum([0], 1, 0, PIECE)})


# -- loss and duplication --------------------------------------------------------------------------
class FaultySocket:
    """A socket whose data datagrams (``sendmsg``) are dropped every ``drop``-th and sent twice
    every ``twice``-th, deterministically; control datagrams (``sendto``) likewise when asked."""

    def __init__(self, sock: socket.socket, drop: int, twice: int, control_drop: Callable[[bytes], bool]):
        self._sock, self.drop, self.twice, self.control_drop = sock, drop, twice, control_drop
        self.data = self.dropped = self.doubled = self.control_dropped = 0

    def sendmsg(self, buffers, ancdata, flags, address):
        self.data += 1
        if self.data % self.drop == 0:
            self.dropped += 1
            return sum(memoryview(b).nbytes for b in buffers)
        sent = self._sock.sendmsg(buffers, ancdata, flags, address)
        if self.data % self.twice == 0:
            self.doubled += 1
            self._sock.sendmsg(buffers, ancdata, flags, address)
        return sent

    def sendto(self, datagram, address):
        if self.control_drop(bytes(datagram)):
            self.control_dropped += 1
            return len(datagram)
        return self._sock.sendto(datagram, address)

    def __getattr__(self, name):
        return getattr(self._sock, name)


class LossyTransport(Transport):
    """A transport whose socket loses and duplicates datagrams (see :class:`FaultySocket`)."""

    def __init__(self, *args, drop: int = 7, twice: int = 5, control_drop=lambda datagram: False, **kwargs):
        super().__init__(*args, **kwargs)
        self.sock = FaultySocket(self.sock, drop, twice, control_drop)


def test_raw_messages_survive_loss_and_duplication(ranks):
    sent = messages(seed=5)
    r = ranks(2, transport=LossyTransport)
    got = r.run({0: send_all(1, sent), 1: take_all(0, sent)})[1]
    assert_bit_exact(got, sent)
    faults = r.transports[0].sock
    assert faults.dropped > 0 and faults.doubled > 0
    assert r.transports[0].stats.retransmitted > 0
    assert r.transports[1].stats.duplicates > 0 and r.transports[1].stats.nacks_sent > 0


@pytest.mark.parametrize("piece", [PIECE, 40])
def test_fixed_sums_survive_loss_and_duplication(ranks, piece):
    rng = np.random.default_rng(6)
    values = [rng.normal(size=4000).astype(np.float32) for _ in range(3)]

    def receive(t: Transport) -> list[np.ndarray]:
        # two sums in a row: the second epoch's dedup must not confuse the first's slots (a take
        # in one message returns the receiver's own array, which the next take reuses: copy)
        return [t.take_sum([0, 1, 2], chunks(4000), 3, piece).copy() for _ in range(2)]

    def send(q: int):
        return lambda t: t.complete(t.post_fixed(3, values[q], 3, piece) + t.post_fixed(3, -values[q], 3, piece))

    r = ranks(4, fixed={3}, transport=LossyTransport)
    first, second = r.run({0: send(0), 1: send(1), 2: send(2), 3: receive})[3]
    expected = sum(quantize(v)[0] for v in values)
    assert first["sum"].reshape(-1)[:4000].tolist() == expected.tolist()
    assert second["sum"].reshape(-1)[:4000].tolist() == (-expected).tolist()
    assert (first["count"] == 3).all() and (second["count"] == 3).all()
    assert sum(t.stats.retransmitted for t in r.transports[:3]) > 0
    assert r.transports[3].stats.duplicates > 0 and r.transports[3].aggregation.arrays.state[0]["duplicates"] > 0


def every_nth(kinds: set[PacketType], n: int) -> Callable[[bytes], bool]:
    """Drop the first control datagram of ``kinds``, then every n-th (counted over every transport
    that shares this function)."""
    seen = [0]

    def drop(datagram: bytes) -> bool:
        if parse_header(datagram).type not in kinds:
            return False
        seen[0] += 1
        return seen[0] % n == 1  # the first one, then every n-th

    return drop


@pytest.mark.parametrize("lost", [PacketType.READY, PacketType.SENT, PacketType.NACK], ids=lambda k: k.name)
def test_lost_control_datagrams_are_recovered(ranks, lost):
    sent = messages(seed=7)[2:5]
    options = TransportOptions(nack_after_s=0.005)
    r = ranks(2, options=options, transport=LossyTransport, control_drop=every_nth({lost}, 2))
    got = r.run({0: send_all(1, sent), 1: take_all(0, sent)})[1]
    assert_bit_exact(got, sent)
    assert r.transports[0].sock.control_dropped + r.transports[1].sock.control_dropped > 0


def test_a_lost_sent_does_not_hold_up_the_next_fixed_sender(ranks):
    # Sender 0's records all arrive but its SENT is lost: the receiver must still READY sender 1
    # (it READYs one sender at a time, the next once the one before has transmitted).
    values = np.arange(50 * CHUNK, dtype=np.float32)
    r = ranks(3, transport=LossyTransport, fixed={2}, drop=10**9, control_drop=every_nth({PacketType.SENT}, 100))

    def send(t: Transport) -> None:
        t.complete(t.post_fixed(2, values, 1, PIECE))

    got = r.run({0: send, 1: send, 2: lambda t: t.take_sum([0, 1], 50, 1, PIECE)["sum"]}, timeout=8)[2]
    assert got.reshape(-1).tolist() == (2 * quantize(values)[0]).tolist()
    assert r.transports[0].sock.control_dropped == 1


@pytest.mark.parametrize("fixed", [False, True])
def test_a_lost_done_is_asked_for_again(ranks, fixed):
    # The receiver's first DONE is lost; the sender, draining, must not wait out the peer timeout:
    # it prods the receiver with a datagram of the epoch, and the receiver says DONE again.
    sent = [np.arange(10, dtype=np.float32), np.ones(3000, dtype=np.float32)]
    if fixed:
        work = {
            0: lambda t: t.complete([h for a in sent for h in t.post_fixed(1, a, 3, PIECE)]),
            1: lambda t: [t.take_sum([0], chunks(a.size), 3, PIECE)["sum"].copy() for a in sent],
        }
    else:
        work = {0: send_all(1, sent), 1: take_all(0, sent)}
    options = TransportOptions(peer_timeout_s=10)
    r = ranks(2, options=options, transport=LossyTransport, fixed={1}, control_drop=every_nth({PacketType.DONE}, 100))
    start = time.monotonic()
    got = r.run(work, timeout=8)[1]
    if fixed:
        for g, a in zip(got, sent):  # type: ignore[call-overload]  # the work's list
            assert g.reshape(-1)[: a.size].tolist() == quantize(a)[0].tolist()
    else:
        assert_bit_exact(got, sent)
    assert r.transports[1].sock.control_dropped == 1
    assert r.transports[0].stats.retransmitted > 0
    assert time.monotonic() - start < 10 * options.nack_after_s + 2


@pytest.mark.parametrize("fixed", [False, True])
def test_every_kind_of_datagram_may_be_lost(ranks, fixed):
    rng = np.random.default_rng(8)
    sent = [rng.normal(size=n).astype(np.float32) for n in (1, 700, 20_000)]
    control = every_nth({PacketType.READY, PacketType.SENT, PacketType.NACK, PacketType.DONE}, 5)
    options = TransportOptions(nack_after_s=0.005, peer_timeout_s=10)
    r = ranks(3, options=options, transport=LossyTransport, fixed={2}, drop=4, twice=3, control_drop=control)
    if fixed:

        def receive(t: Transport) -> list[np.ndarray]:
            return [t.take_sum([0, 1], chunks(a.size), 5, PIECE)["sum"].reshape(-1)[: a.size] for a in sent]

        def send(t: Transport) -> None:
            t.complete([h for a in sent for h in t.post_fixed(2, a, 5, PIECE)])

        got = r.run({0: send, 1: send, 2: receive})[2]
        for g, a in zip(got, sent):  # type: ignore[call-overload]  # receive's list
            assert g.tolist() == (2 * quantize(a)[0]).tolist()
    else:
        both = {0: sent, 1: sent[::-1]}
        results = r.run(
            {0: send_all(2, both[0]), 1: send_all(2, both[1]), 2: lambda t: {q: take_all(q, both[q])(t) for q in both}}
        )
        for q, got in results[2].items():  # type: ignore[union-attr]  # the receiver's dict
            assert_bit_exact(got, both[q])
    assert sum(t.sock.control_dropped for t in r.transports) > 0
    assert sum(t.stats.retransmitted for t in r.transports) > 0


# -- dead peers and aborts -----------------------------------------------------------------------
def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_alone(target: Callable[[], object]) -> tuple[BaseException | None, float]:
    """Run ``target`` in a thread; what it raised and how long it took."""
    raised: list[BaseException] = []

    def go() -> None:
        try:
            target()
        except BaseException as exc:
            raised.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=go)
    thread.start()
    thread.join(JOIN_S)
    assert not thread.is_alive(), "the transport did not give up"
    return (raised[0] if raised else None), time.monotonic() - start


def test_a_take_from_a_peer_with_nothing_listening_fails_within_the_timeout():
    options = TransportOptions(peer_timeout_s=0.5)
    t = Transport(0, [("127.0.0.1", 0), ("127.0.0.1", 0), ("127.0.0.1", closed_port())], options)
    try:
        error, elapsed = run_alone(lambda: t.take_raw(2, np.empty(100), 1))
        assert isinstance(error, CommError)
        assert "rank 0: nothing from rank 2 in 0.5 s while waiting for its message" in str(error)
        assert 0.4 < elapsed < 5
        assert t.stats.readies_sent >= 2  # it asked again before giving up
    finally:
        t.close()


@pytest.mark.parametrize("fixed", [False, True])
def test_a_peer_computing_longer_than_the_timeout_is_waited_for(ranks, fixed):
    # Rank 1 answers rank 0's first message, then computes (the sleep stands for a long round)
    # for 4x the peer timeout before it sends its reply: its ALIVEs keep it from looking dead,
    # and rank 0 asks for the reply at doubling intervals, not every nack_after_s.
    options = TransportOptions(peer_timeout_s=0.4, nack_after_s=0.05)
    compute_s = 4 * options.peer_timeout_s
    reply = np.arange(100, dtype=np.float32)

    def rank0(t: Transport) -> np.ndarray:
        t.complete([t.post_raw(1, np.ones(4), 1)])
        if fixed:
            return t.take_sum([1], chunks(reply.size), 2, PIECE)["sum"].reshape(-1)[: reply.size]
        out = np.empty_like(reply)
        t.take_raw(1, out, 2)
        return out

    def rank1(t: Transport) -> None:
        t.take_raw(0, np.empty(4), 1)
        time.sleep(compute_s)
        t.complete(t.post_fixed(0, reply, 2, PIECE) if fixed else [t.post_raw(0, reply, 2)])

    r = ranks(2, options=options, fixed={0} if fixed else ())
    got = r.run({0: rank0, 1: rank1})[0]
    expected = quantize(reply)[0] if fixed else reply
    assert got.tolist() == expected.tolist()  # type: ignore[union-attr]  # rank0's array
    # Asked at 0, then 0.05, 0.15, 0.35, 0.75 and 1.55 s: 6 READYs where a fixed 0.05 s would send 33.
    assert r.transports[0].stats.readies_sent <= 8


def test_after_a_slow_sender_a_lost_sent_is_recovered_at_the_shortest_wait(ranks):
    # The receiver's asks grew while rank 1 computed; once data flows again a lost SENT (here:
    # every SENT) must be covered after nack_after_s, not after the grown interval.
    options = TransportOptions(peer_timeout_s=5, nack_after_s=0.05)
    compute_s = 1.6  # asks at 0, 0.05, 0.15, 0.35, 0.75, 1.55 s: the next would be 1.6 s later
    reply = np.arange(20_000, dtype=np.float32)  # 56 datagrams, every 7th lost on the way

    def rank0(t: Transport) -> tuple[np.ndarray, float]:
        t.complete([t.post_raw(1, np.ones(4), 1)])
        out = np.empty_like(reply)
        start = time.monotonic()
        t.take_raw(1, out, 2)
        return out, time.monotonic() - start

    def rank1(t: Transport) -> None:
        t.take_raw(0, np.empty(4), 1)
        time.sleep(compute_s)  # stands for a long round
        t.complete([t.post_raw(0, reply, 2)])

    def no_sent(datagram: bytes) -> bool:
        return parse_header(datagram).type == PacketType.SENT

    r = ranks(2, options=options, transport=LossyTransport, control_drop=no_sent)
    got, waited = r.run({0: rank0, 1: rank1})[0]  # type: ignore[misc]  # rank0's pair
    assert got.tobytes() == reply.tobytes()
    assert r.transports[1].sock.dropped > 0 and r.transports[1].sock.control_dropped > 0
    assert waited < compute_s + 1.0


def test_a_peer_that_stops_after_joining_is_reported_dead(ranks):
    # A rank whose process ends (its transport closes: no more ALIVE) after one exchange.
    r = ranks(2, options=TransportOptions(peer_timeout_s=0.5))
    first, second = r.transports
    done = threading.Event()

    def peer() -> None:
        second.take_raw(0, np.empty(4), 1)
        second.close()
        done.set()

    thread = threading.Thread(target=peer)
    thread.start()
    first.complete([first.post_raw(1, np.ones(4), 1)])
    assert done.wait(JOIN_S)
    error, elapsed = run_alone(lambda: first.take_raw(1, np.empty(4), 2))
    thread.join()
    assert isinstance(error, CommError) and "nothing from rank 1 in 0.5 s" in str(error)
    assert elapsed < 5


def test_a_send_to_a_peer_that_never_takes_fails_naming_it(ranks):
    r = ranks(2, options=TransportOptions(peer_timeout_s=0.5))
    sender = r.transports[0]
    error, elapsed = run_alone(lambda: sender.complete([sender.post_raw(1, np.ones(10), 4)]))
    assert isinstance(error, CommError) and "nothing from rank 1" in str(error) and "to become ready" in str(error)
    assert elapsed < 5


def test_a_fixed_take_from_a_silent_sender_names_it(ranks):
    r = ranks(3, options=TransportOptions(peer_timeout_s=0.5), fixed={0})
    receiver = r.transports[0]
    error, elapsed = run_alone(lambda: receiver.take_sum([1, 2], 4, 3, PIECE))
    assert isinstance(error, CommError) and "nothing from rank 1" in str(error) and "for its records" in str(error)
    assert elapsed < 5


def test_draining_fails_when_a_receiver_never_answers(ranks):
    r = ranks(2, options=TransportOptions(peer_timeout_s=0.5))
    t = r.transports[0]
    t.post_raw(1, np.ones(3), 1)
    error, _ = run_alone(lambda: t.drain(lambda: True))
    assert isinstance(error, CommError) and "nothing from rank 1" in str(error) and "for DONE" in str(error)


def test_an_aborted_fabric_wakes_a_waiting_take():
    aborted = threading.Event()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        peer.settimeout(JOIN_S)
        t = Transport(0, [("127.0.0.1", 0), peer.getsockname()], TransportOptions(), aborted=aborted)
        try:
            raised: list[BaseException] = []

            def take() -> None:
                try:
                    t.take_raw(1, np.empty(10), 1)
                except BaseException as exc:
                    raised.append(exc)

            thread = threading.Thread(target=take)
            thread.start()
            ready = parse_header(peer.recv(2048))  # the take is waiting: it asked for the message
            assert ready.type == PacketType.READY and ready.epoch == 1
            aborted.set()
            thread.join(JOIN_S)
            assert not thread.is_alive()
            assert len(raised) == 1 and isinstance(raised[0], CommError)
            assert "rank 0: another rank failed" in str(raised[0])
        finally:
            t.close()


def test_foreign_datagrams_on_the_port_are_ignored(ranks):
    sent = [np.arange(64, dtype=np.uint8)]
    r = ranks(2)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
        for junk in (b"", b"hello", b"\0" * 32, b"PNCH" + b"\xff" * 60):
            stranger.sendto(junk, r.transports[1].addresses[1])
        got = r.run({0: send_all(1, sent), 1: take_all(0, sent)})[1]
    assert_bit_exact(got, sent)
