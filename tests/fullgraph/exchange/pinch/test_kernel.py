"""PINCH's kernel programs, run for real: the XDP adds through BPF_PROG_TEST_RUN against numpy's
exact sums, and broadcast, fault injection and syscall counting on real namespaces and processes;
nothing stays attached after a close or after the process is SIGKILLed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from fullgraph.exchange.pinch import wire
from fullgraph.exchange.pinch.fixedpoint import MANTISSA_MAX, MAX_SHIFT, contributions
from fullgraph.exchange.pinch.kernel import BpfStats, KernelAggregator, SyscallCounter

from .conftest import RUN_TIMEOUT, Host
from .packets import ETH_P_ARP, fixed_frame, frame, header, records

pytestmark = pytest.mark.root

XDP_DROP, XDP_PASS = 1, 2
PORTS = (47000, 47010)
PORT = PORTS[0]
CAPACITY = 512
MARK = 0x50424354
AGENT_TIMEOUT = 30
AGENT_AGGREGATES = 64  # the aggregate array of agent.py's `aggregate`
FREED_WITHIN = 10.0  # seconds the kernel may take to free a program once its last reference is gone (RCU)
POLL = 0.05


@pytest.fixture
def agg(bpf):
    with KernelAggregator("lo", CAPACITY, PORTS, attach=False) as aggregator:
        yield aggregator


def arm(agg: KernelAggregator, sender: int, epoch: int, base: int = 0, limit: int = CAPACITY, shared: int = 1) -> None:
    """Arm ``sender``; ``shared`` (atomic adds) unless its range is its own."""
    agg.arms[sender] = (epoch, base, limit, shared)


def untouched(agg: KernelAggregator) -> bool:
    state = agg.state[0]
    counters = [state[f] for f in ("received", "duplicates", "passed", "packets", "errors")]
    return not any(counters) and not agg.aggregates["count"].any() and not agg.seen.any()


def one_record(index: int = 0, value: int = 1, flags: int = 0) -> np.ndarray:
    return records([index], np.full((1, wire.CHUNK), value), flags)


def test_run_time_is_counted_while_stats_are_on(agg):
    runs = 10
    with BpfStats():
        for _ in range(runs):
            agg.test_run(frame(b"not ours", PORTS[1]))
    run_time_ns, run_cnt = agg.program_stats()
    assert run_cnt == runs and run_time_ns > 0


@pytest.mark.parametrize("shifted", [False, True], ids=["shift 0", "shifts 0-22 and one 23"])
@pytest.mark.parametrize("shared", [1, 0], ids=["atomic adds", "plain adds (own range)"])
def test_sums_are_exact_and_only_the_completing_packet_passes(agg, shared, shifted):
    """Random int32 mantissas (every sender's first record at +-MANTISSA_MAX), with shift 0 or
    random shifts up to MAX_SHIFT; shifted, one record carries shift 23, which the program must
    count as an error and not add."""
    rng = np.random.default_rng(3)
    senders, packets, per_packet, span = 4, 5, 10, 64
    expected_sum = np.zeros((CAPACITY, wire.CHUNK), np.int64)
    expected_count = np.zeros(CAPACITY, np.int64)
    frames = []
    for sender in range(senders):
        base = 100 * sender
        arm(agg, sender, epoch=7, base=base, limit=base + span, shared=shared)
        for seq in range(packets):
            index = rng.integers(0, span, per_packet)
            mantissas = rng.integers(-MANTISSA_MAX, MANTISSA_MAX, (per_packet, wire.CHUNK), endpoint=True)
            shift = rng.integers(0, MAX_SHIFT, per_packet, endpoint=True) if shifted else np.zeros(per_packet, int)
            if seq == 0:  # the largest contributions, both signs: sign extension before the shift
                mantissas[0] = np.where(np.arange(wire.CHUNK) % 2, MANTISSA_MAX, -MANTISSA_MAX)
                shift[0] = MAX_SHIFT if shifted else 0
            if shifted and (sender, seq) == (2, 3):
                shift[4] = MAX_SHIFT + 1
            recs = records(index, mantissas, shift=shift)
            good = recs["shift"] <= MAX_SHIFT
            np.add.at(expected_sum, base + index[good], contributions(recs[good]))
            np.add.at(expected_count, base + index[good], 1)
            frames.append(fixed_frame(sender, 7, seq, recs, PORT))
    if shifted:
        assert expected_sum.max() > 1 << 53 and expected_sum.min() < -(1 << 53)  # past 2^53: the shift was done
    agg.state["expected"] = senders * packets * per_packet
    results = [agg.test_run(f)[0] for f in rng.permutation(np.array(frames, dtype=object))]
    assert results == [XDP_DROP] * (len(frames) - 1) + [XDP_PASS]
    assert np.array_equal(agg.aggregates["sum"], expected_sum)
    assert np.array_equal(agg.aggregates["count"], expected_count)
    state = agg.state[0]
    assert (state["received"], state["packets"], state["passed"]) == (agg.state["expected"][0], len(frames), 1)
    assert (state["duplicates"], state["errors"]) == (0, int(shifted))  # the record with shift 23
    assert not agg.aggregates["flags"].any()


def test_a_duplicate_is_added_once(agg):
    arm(agg, 2, epoch=1)
    agg.state["expected"] = 100
    packet = fixed_frame(2, 1, 9, one_record(5, 11), PORT)
    assert agg.test_run(packet)[0] == XDP_DROP
    assert agg.test_run(packet)[0] == XDP_DROP
    assert agg.aggregates[5]["sum"].tolist() == [11] * wire.CHUNK and agg.aggregates[5]["count"] == 1
    assert (agg.state[0]["duplicates"], agg.state[0]["received"]) == (1, 1)
    assert agg.seen[2, 9] == 1


def test_an_old_epochs_copy_cannot_claim_a_newer_slot(agg):
    arm(agg, 0, epoch=3)
    agg.state["expected"] = 100
    agg.seen[0, 0] = 3  # epoch 3's packet 0 is in
    assert agg.test_run(fixed_frame(0, 3, 0, one_record(), PORT))[0] == XDP_DROP
    assert agg.state[0]["duplicates"] == 1 and not agg.aggregates["count"].any()


@pytest.mark.parametrize("armed_epoch", [0, 2], ids=["unarmed", "stale"])
def test_unarmed_or_stale_epochs_pass_to_user_space(agg, armed_epoch):
    arm(agg, 1, epoch=armed_epoch)
    assert agg.test_run(fixed_frame(1, 1, 0, one_record(), PORT))[0] == XDP_PASS
    assert agg.state[0]["passed"] == 1
    agg.state["passed"] = 0
    assert untouched(agg)


def test_saturation_flags_or_into_the_aggregate(agg):
    arm(agg, 0, epoch=1)
    agg.state["expected"] = 100
    agg.test_run(fixed_frame(0, 1, 0, one_record(3, flags=wire.R_SATURATED), PORT))
    agg.test_run(fixed_frame(0, 1, 1, one_record(3), PORT))
    assert agg.aggregates[3]["flags"] == wire.R_SATURATED and agg.aggregates[3]["count"] == 2


def test_overflow_is_flagged_past_256_contributions(agg):
    arm(agg, 0, epoch=1)
    agg.state["expected"] = 1000
    for seq in range(256):
        agg.test_run(fixed_frame(0, 1, seq, one_record(0), PORT))
    assert agg.aggregates[0]["flags"] == 0
    agg.test_run(fixed_frame(0, 1, 256, one_record(0), PORT))
    assert agg.aggregates[0]["flags"] == wire.R_OVERFLOW
    assert agg.aggregates[0]["count"] == 257 and agg.aggregates[0]["sum"][0] == 257


def test_an_out_of_bounds_index_is_an_error_and_not_added(agg):
    arm(agg, 0, epoch=1, base=10, limit=20)
    agg.state["expected"] = 100
    recs = records([9, 10], np.ones((2, wire.CHUNK), np.int64))
    assert agg.test_run(fixed_frame(0, 1, 0, recs, PORT))[0] == XDP_DROP
    assert agg.aggregates[19]["count"] == 1 and agg.aggregates["count"].sum() == 1
    assert agg.state[0]["errors"] == 1


@pytest.mark.parametrize(
    "case",
    ["short-body", "zero-records", "too-many-records", "seq-past-window"],
)
def test_malformed_data_packets_are_dropped_as_errors(agg, case):
    arm(agg, 0, epoch=1)
    recs = one_record()
    packet = {
        "short-body": fixed_frame(0, 1, 0, recs, PORT, count=2),
        "zero-records": fixed_frame(0, 1, 0, recs[:0], PORT),
        "too-many-records": fixed_frame(0, 1, 0, records(np.zeros(65), np.zeros((65, wire.CHUNK))), PORT),
        "seq-past-window": fixed_frame(0, 1, wire.WINDOW, recs, PORT),
    }[case]
    assert agg.test_run(packet)[0] == XDP_DROP
    assert agg.state[0]["errors"] == 1
    agg.state["errors"] = 0
    assert untouched(agg)


def test_other_traffic_passes_untouched(agg):
    arm(agg, 0, epoch=1)
    pinch = fixed_frame(0, 1, 0, one_record(), PORT)
    other_port = fixed_frame(0, 1, 0, one_record(), PORTS[1])
    not_pinch = frame(b"hello, not a PINCH packet at all, long enough for a header", PORT)
    arp = pinch[:12] + ETH_P_ARP.to_bytes(2, "big") + pinch[14:]
    control = frame(header(wire.PacketType.READY, 0, 1), PORT)
    for packet in (other_port, not_pinch, arp):
        assert agg.test_run(packet)[0] == XDP_PASS
    assert untouched(agg)
    assert agg.test_run(control)[0] == XDP_PASS
    assert agg.state[0]["passed"] == 1


@pytest.mark.parametrize("mtu, per_packet", [(1500, wire.records_per_packet(1500)), (9000, wire.MAX_RECORDS)])
def test_xdp_sums_real_traffic_and_passes_only_the_completion(lan, mtu, per_packet):
    sender, receiver = lan(2, mtu)
    packets = 20
    listening = receiver.agent("aggregate", "48400", str(packets * per_packet))
    assert json.loads(listening.stdout.readline()) == {"ready": True}
    finish(sender.agent("send", receiver.address, "48400", str(packets), "--fixed", str(per_packet)))
    got = finish(listening)
    index = np.arange(AGENT_AGGREGATES)
    expected = np.where(index < per_packet, sum(i + index + 1 for i in range(packets)), 0)
    assert got["sums"] == expected.tolist()
    assert got["counts"] == np.where(index < per_packet, packets, 0).tolist()
    assert got["got"] == 1  # only the completing packet reaches the socket
    state = got["state"]
    assert (state["received"], state["packets"], state["passed"], state["errors"]) == (
        packets * per_packet,
        packets,
        1,
        0,
    )


def receivers(hosts, port_of) -> list[subprocess.Popen]:
    started = [host.agent("receive", str(port_of(host))) for host in hosts]
    for agent in started:
        assert json.loads(agent.stdout.readline()) == {"ready": True}
    return started


def finish(agent: subprocess.Popen) -> dict:
    out, err = agent.communicate(timeout=AGENT_TIMEOUT)
    assert agent.returncode == 0, err
    return json.loads(out.splitlines()[-1])


def test_broadcast_clones_one_packet_to_every_peer_once(lan):
    sender, *peers = lan(4)
    # The testbed shapes its links with a root tbf; tcx attaches beside it and must leave it there.
    sender.run("tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "1gbit", "burst", "1mb", "latency", "10ms")
    port_of = {peer.address: 48000 + i for i, peer in enumerate(peers)}
    listening = receivers(peers, lambda host: port_of[host.address])
    payload = header(wire.PacketType.RAW, 0, 1, count=5, flags=wire.F_BROADCAST) + b"hello"
    peer_list = [[peer.address, port_of[peer.address], peer.mac.hex()] for peer in peers]
    # Sent to the first peer's address but another port: every clone is rewritten.
    cast = sender.agent(
        "broadcast", sender.address, peers[0].address, "48999", payload.hex(), str(MARK), json.dumps(peer_list)
    )
    assert finish(cast)["counters"] == {"clones": 2 * len(peers), "errors": 0}
    for agent in listening:
        assert finish(agent)["got"] == [payload.hex(), payload.hex()]  # the UDP and the raw socket's
    assert sender.run("tc", "filter", "show", "dev", "eth0", "egress") == ""
    qdiscs = sender.run("tc", "qdisc", "show", "dev", "eth0")
    assert "clsact" not in qdiscs and "tbf" in qdiscs


def test_a_packet_without_the_broadcast_flag_goes_only_where_it_was_sent(lan):
    sender, first, second = lan(3)
    listening = receivers([first, second], lambda host: 48100)
    payload = header(wire.PacketType.RAW, 0, 1, count=2) + b"hi"
    peer_list = [[peer.address, 48100, peer.mac.hex()] for peer in (first, second)]
    cast = sender.agent(
        "broadcast", sender.address, first.address, "48100", payload.hex(), str(MARK), json.dumps(peer_list)
    )
    assert finish(cast)["counters"] == {"clones": 0, "errors": 0}
    assert [finish(agent)["got"] for agent in listening] == [[payload.hex()] * 2, []]


def test_faults_drop_everything_at_egress(lan):
    sender, receiver = lan(2)
    (listening,) = receivers([receiver], lambda host: 48200)
    sent = finish(sender.agent("send", receiver.address, "48200", "20", "--faults", "egress", "1000000", "0"))
    assert sent["counters"] == {"seen": 20, "dropped": 20, "duplicated": 0}
    assert finish(listening)["got"] == []


@pytest.mark.parametrize("direction", ["egress", "ingress"])
def test_faults_duplicate_everything(lan, direction):
    sender, receiver = lan(2)
    args = ["--faults", direction, "0", "1000000"]
    listening = receiver.agent("receive", "48300", *(args if direction == "ingress" else []))
    assert json.loads(listening.stdout.readline()) == {"ready": True}
    sent = finish(sender.agent("send", receiver.address, "48300", "10", *(args if direction == "egress" else [])))
    got = finish(listening)
    counters = sent["counters"] if direction == "egress" else got["counters"]
    assert counters == {"seen": 10, "dropped": 0, "duplicated": 10}
    assert sorted(bytes.fromhex(d).decode() for d in got["got"]) == sorted(str(i) for i in range(10) for _ in "ab")


def bpftool(*args: str) -> list[dict]:
    """``bpftool -j ARGS`` (global: program and link ids are the same in every namespace)."""
    tool = shutil.which("bpftool")
    if tool is None:
        pytest.skip("needs bpftool")
    result = subprocess.run([tool, "-j", *args], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) or []


def alive(programs: list[int]) -> set[int]:
    """Those of ``programs`` still loaded or still held by a BPF link."""
    linked = {link["prog_id"] for link in bpftool("link", "show")}
    loaded = {prog["id"] for prog in bpftool("prog", "show")}
    return (linked | loaded) & set(programs)


def freed(programs: list[int]) -> bool:
    """Whether every one of ``programs`` is unloaded, within FREED_WITHIN seconds."""
    deadline = time.monotonic() + FREED_WITHIN
    while alive(programs):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL)
    return True


def hold(host: Host, kind: str) -> tuple[subprocess.Popen, list[int]]:
    """agent.py's ``hold KIND``, ready: the process and its programs' ids, checked attached."""
    holder = host.agent("hold", kind)
    line = holder.stdout.readline()
    assert line, holder.stderr.read()
    ready = json.loads(line)
    assert ready["ready"]
    programs = ready["programs"]
    assert {link["prog_id"] for link in bpftool("link", "show")} >= set(programs)  # all through links
    if kind in ("xdp", "all"):
        assert host.link()["xdp"]["prog"]["id"] == programs[0]
    return holder, programs


def release(holder: subprocess.Popen) -> None:
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert finish(holder) == {"closed": True}


def nothing_attached(host: Host) -> None:
    """No XDP program, TC filter or clsact qdisc on the host's eth0 (bpftool 7.1 does not list tcx
    links: :func:`freed` is what shows those gone)."""
    assert "xdp" not in host.link()
    (net,) = json.loads(host.run("bpftool", "-j", "net", "show"))
    assert not net["xdp"] and not net["tc"]
    for direction in ("egress", "ingress"):
        assert host.run("tc", "filter", "show", "dev", "eth0", direction) == ""
    assert "clsact" not in host.run("tc", "qdisc", "show", "dev", "eth0")


@pytest.mark.parametrize("kind", ["xdp", "broadcast", "faults"])
def test_close_leaves_nothing_attached(lan, kind):
    (host,) = lan(1)
    holder, programs = hold(host, kind)
    release(holder)
    nothing_attached(host)
    assert freed(programs)


def test_sigkill_leaves_nothing_attached_and_the_device_free(lan):
    (host,) = lan(1)
    holder, programs = hold(host, "all")
    assert len(programs) == 3
    holder.kill()  # what MPI_ABORT does to every rank: no close(), no atexit, no finally
    holder.communicate(timeout=AGENT_TIMEOUT)
    assert holder.returncode == -signal.SIGKILL
    # The kernel detaches a link's program as the dying process's fds close, before it is reaped.
    nothing_attached(host)
    assert not {link["prog_id"] for link in bpftool("link", "show")} & set(programs)
    fresh, again = hold(host, "all")  # at once: no EBUSY from a program left behind
    release(fresh)
    nothing_attached(host)
    assert freed(programs + again)  # programs and their maps: nothing else referenced them


def test_syscalls_of_a_watched_process_are_counted(bpf):
    calls = 5000
    code = f"import os, sys\nsys.stdin.readline()\nfor _ in range({calls}):\n    os.getppid()\nprint('done')"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    with SyscallCounter() as counter:
        counter.watch(child.pid)
        out, _ = child.communicate("go\n", timeout=AGENT_TIMEOUT)
        assert out.strip() == "done"
        assert counter.count(child.pid) >= calls
        assert counter.count(os.getpid()) == 0  # not watched
