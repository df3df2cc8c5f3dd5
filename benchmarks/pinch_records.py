#!/usr/bin/env python
"""PINCH per record: the XDP aggregation against user space, and fixed point against float.

A record is 16 values as int32 mantissas with one shift, summed in int64 at 2^-32 (72 bytes on the
wire, 20 per 1,500-byte datagram). Three parts:

1. ``test_run``: the XDP program (``KernelAggregator(attach=False)``) run once per frame by
   BPF_PROG_TEST_RUN on ``--frames`` distinct Ethernet + IPv4 + UDP + PINCH frames of 20 records
   (one armed sender, every sequence number once): the kernel's ns per packet (mean, median),
   records/s, the program's own run-time statistics (under ``BpfStats``) and the wall time of the
   system call from Python; beside it ``Aggregation.feed`` (what the receiver does in user space
   without the program) on the same datagrams. The sums are checked against the records.
2. ``end_to_end``: ``--messages`` messages of ``--values`` float32 values from a sender in the
   testbed's m0 to a receiver in l0 (``testbed up --link-gbit G``, default 10 Gbit/s,
   so the receiver's CPU and not the link is the limit), each this script re-run in its namespace
   (``ip netns exec``) with a ``Transport`` on [(m0, port), (l0, port + 1)]. Modes: ``udp``
   (``post_raw`` / ``take_raw`` of the float32 bytes), ``pinch-user`` (``post_fixed`` /
   ``take_fixed``, summed by ``Aggregation.feed`` in user space) and ``pinch-kernel`` (the same
   takes with the XDP program attached to l0's eth0 in generic mode, the receiver reading the
   memory-mapped sums). The sender posts every message before the receiver starts, then answers
   its READYs; the first message is a warm-up and is not counted. Per mode, at the receiver:
   records/s over the takes' wall time, the receiving thread's CPU inside the takes
   (``Transport.stats.receive_cpu_s``, and its user/system split from ``getrusage``), the XDP
   program's run time (``program_stats``, the statistics held on by this process in the root
   namespace), CPU ns per record (each part and the total), system calls of the receiver
   (``SyscallCounter`` around each take, its own map reads taken off) and the socket calls the
   transport counts, datagrams it read, and whether every message came back exact (udp:
   bit-exact; pinch: the sums are exactly what the sender's records encode, values drawn uniform
   in +-[0.01, 100]). ``ratios``: udp's receiver CPU per record over each pinch mode's
   (the target: pinch-kernel >= 5x).
3. ``fixed_point_error``: for k = ``--contributions`` gradient-like float32 vectors (normal, std
   1e-3, plus 0.1% of values of magnitude 1-1000), the max and mean absolute error against the
   float64 sum of the fixed-point sum (as float64, and cast to float32 as the pinch endpoint
   delivers it), ``fixedpoint.sum_error_bound(k)``, and a sequential float32 sum's (the MPI
   path's). Pure numpy: it runs without root.

Parts 1 and 2 need root (BPF, namespaces, tc); without it they say ``skipped`` with the reason.
The network stack's work before XDP or the socket (softirq, on veth mostly in the sender's
context) is in neither receiver figure.

Run: ``sudo .venv/bin/python benchmarks/pinch_records.py [--frames 20000] [--values 1048576]
[--messages 40] [--link-gbit 10] [--output FILE]`` (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gzip
import inspect
import json
import os
import resource
import select
import statistics
import struct
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import common
import numpy as np

from fullgraph.exchange.pinch.aggregate import AggregateArrays, Aggregation, ArmedSender
from fullgraph.exchange.pinch.fixedpoint import (
    SCALE_BITS,
    chunks,
    contributions,
    dequantize,
    quantize,
    sum_error_bound,
    to_records,
)
from fullgraph.exchange.pinch.wire import CHUNK, HEADER, RECORD, PacketType, pack_header, records_per_packet

TESTBED = [sys.executable, "-m", "testbed.cli"]
SCRIPT = Path(__file__).resolve()
MTU = 1500
RECORDS_PER_PACKET = records_per_packet(MTU)  # 20
HOST_IF = "eth0"  # the testbed's host end of each link
KIND = 1  # the messages' kind byte (any; both ends agree)
XDP_ACTIONS = {0: "aborted", 1: "drop", 2: "pass", 3: "tx", 4: "redirect"}
CHILD_TIMEOUT_S = 180
MODES = ("udp", "pinch-user", "pinch-kernel")
NOTES = [
    "Receiver CPU = the receiving thread's CPU inside take_raw / take_fixed (user + system, "
    "Transport.stats.receive_cpu_s) plus, for pinch-kernel, the XDP program's run time "
    "(bpf_prog_info.run_time_ns; kernel.bpf_stats_enabled adds a clock read per run to it).",
    "Not in any receiver figure: the network stack's work before XDP and the socket (generic XDP "
    "runs on an skb, after the veth/bridge path), done in softirq, on veth mostly in the sender's "
    "context.",
    "records/s at the receiver is over the takes' wall time: the Python sender (one sendmsg per "
    "datagram), not the 10 Gbit/s link, sets it.",
    "The sender and the receiver share the machine's cores with each other and with softirq. Without "
    "CONFIG_IRQ_TIME_ACCOUNTING (machine.irq_time_accounting) softirq work that runs while a thread is "
    "on the CPU is charged to that thread's CPU time.",
    "getrusage_user_s / getrusage_system_s: the receiving thread's getrusage(RUSAGE_THREAD) around "
    "the takes, a tick-sampled split (CONFIG_TICK_CPU_ACCOUNTING) that need not add up to "
    "receive_cpu_s (exact, from the scheduler): read it as a proportion where the takes are long.",
]


# -- frames for BPF_PROG_TEST_RUN ------------------------------------------------------------------
ETH = struct.Struct("!6s6sH")
IPV4 = struct.Struct("!BBHHHBBH4s4s")
UDP = struct.Struct("!HHHH")
ETH_P_IP = 0x0800
IPPROTO_UDP = 17
SRC_MAC, DST_MAC = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")
SRC_IP, DST_IP = bytes([10, 237, 0, 10]), bytes([10, 237, 0, 2])


def ip_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(payload: bytes, sport: int, dport: int, ident: int) -> bytes:
    """An Ethernet frame carrying ``payload`` in IPv4 (no options) and UDP (no checksum)."""
    udp = UDP.pack(sport, dport, UDP.size + len(payload), 0)
    fields = [0x45, 0, IPV4.size + UDP.size + len(payload), ident & 0xFFFF, 0, 64, IPPROTO_UDP, 0, SRC_IP, DST_IP]
    fields[7] = ip_checksum(IPV4.pack(*fields))
    return ETH.pack(DST_MAC, SRC_MAC, ETH_P_IP) + IPV4.pack(*fields) + udp + payload


def pinch_datagrams(frames: int, seed: int) -> tuple[list[bytes], np.ndarray]:
    """``frames`` FIXED datagrams of sender 0, epoch 1, seq 0..frames-1, RECORDS_PER_PACKET distinct
    records each, and all the records."""
    rng = np.random.default_rng(seed)
    recs = to_records(signed_uniform(rng, frames * RECORDS_PER_PACKET * CHUNK))
    out = []
    for seq in range(frames):
        part = recs[seq * RECORDS_PER_PACKET : (seq + 1) * RECORDS_PER_PACKET]
        header = pack_header(PacketType.FIXED, 0, 1, seq=seq, packets=frames, count=len(part), kind=KIND)
        out.append(header + part.tobytes())
    return out, recs


def signed_uniform(rng: np.random.Generator, n: int) -> np.ndarray:
    """float32 uniform in +-[0.01, 100] (records with shifts 0-8)."""
    magnitude = rng.uniform(0.01, 100.0, n).astype(np.float32)
    return np.where(rng.random(n) < 0.5, -magnitude, magnitude)


def summary_ns(samples: list[int] | np.ndarray) -> dict:
    a = np.asarray(samples, dtype=np.float64)
    return {
        "mean": round(float(a.mean()), 1),
        "median": float(np.median(a)),
        "p90": float(np.percentile(a, 90)),
        "p99": float(np.percentile(a, 99)),
        "min": float(a.min()),
    }


def test_run_part(frames: int, port: int, seed: int) -> dict:
    """Part 1: the XDP program on every frame once, in the kernel, and Aggregation.feed beside it."""
    from fullgraph.exchange.pinch.kernel import BpfStats, KernelAggregator

    datagrams, recs = pinch_datagrams(frames, seed)
    packets = [udp_frame(d, port, port + 1, i) for i, d in enumerate(datagrams)]
    total = frames * RECORDS_PER_PACKET
    armed = ArmedSender(0, 1, 0, total, frames)
    out: dict = {
        "frames": frames,
        "records_per_frame": RECORDS_PER_PACKET,
        "frame_bytes": len(packets[0]),
        "xdp_mode": "BPF_PROG_TEST_RUN (no device)",
    }
    with BpfStats(), KernelAggregator("lo", total, (port, port + 2), attach=False) as aggregator:
        arrays = AggregateArrays(aggregator.aggregates, aggregator.arms, aggregator.seen, aggregator.state)
        Aggregation(arrays).arm([armed])
        run_ns0, run_cnt0 = aggregator.program_stats()
        kernel_ns, wall_ns, actions = [], [], Counter()
        for packet in packets:
            t0 = time.perf_counter_ns()
            action, ns = aggregator.test_run(packet, 1)
            wall_ns.append(time.perf_counter_ns() - t0)
            kernel_ns.append(ns)
            actions[XDP_ACTIONS.get(action, str(action))] += 1
        run_ns1, run_cnt1 = aggregator.program_stats()
        agg = aggregator.aggregates[:total]
        exact = bool(
            np.array_equal(agg["sum"], contributions(recs)) and (agg["count"] == 1).all() and (agg["flags"] == 0).all()
        )
        state = {name: int(aggregator.state[name][0]) for name in ("received", "packets", "duplicates", "errors")}
        del agg  # no view of the maps outlives them
    kernel = np.asarray(kernel_ns, dtype=np.float64)
    runs = run_cnt1 - run_cnt0
    out["kernel"] = {
        "ns_per_packet": summary_ns(kernel),
        "ns_per_record_mean": round(float(kernel.mean()) / RECORDS_PER_PACKET, 1),
        "records_per_s": round(RECORDS_PER_PACKET * 1e9 / float(kernel.mean())),
        "actions": dict(actions),
        "program_stats": {
            "runs": runs,
            "run_time_ns": run_ns1 - run_ns0,
            "ns_per_packet": round((run_ns1 - run_ns0) / runs, 1) if runs else None,
        },
        "state": state,
        "exact": exact,
    }
    wall = np.asarray(wall_ns, dtype=np.float64)
    out["syscall_from_python"] = {
        "ns_per_packet": summary_ns(wall),
        "note": "the bpf(BPF_PROG_TEST_RUN) call's wall time from Python, ctypes and copies included",
    }

    # The same datagrams through the user-space path.
    aggregation = Aggregation(AggregateArrays.in_memory(total))
    aggregation.arm([armed])
    views = [memoryview(d) for d in datagrams]
    t0 = time.perf_counter_ns()
    cpu0 = time.thread_time_ns()
    for d in views:
        aggregation.feed(d)
    cpu = time.thread_time_ns() - cpu0
    wall_total = time.perf_counter_ns() - t0
    agg = aggregation.arrays.aggregates[:total]
    out["user_space_feed"] = {
        "ns_per_packet_mean": round(wall_total / frames, 1),
        "cpu_ns_per_packet_mean": round(cpu / frames, 1),
        "ns_per_record_mean": round(wall_total / frames / RECORDS_PER_PACKET, 1),
        "records_per_s": round(total * 1e9 / wall_total),
        "exact": bool(np.array_equal(agg["sum"], contributions(recs)) and (agg["count"] == 1).all()),
    }
    out["feed_over_kernel"] = round(wall_total / frames / float(kernel.mean()), 1)
    return out


# -- end to end: the two roles ---------------------------------------------------------------------
def message_values(seed: int, message: int, values: int) -> np.ndarray:
    return signed_uniform(np.random.default_rng([seed, message]), values)


def addresses(args) -> list[tuple[str, int]]:
    return [(args.sender_ip, args.port), (args.receiver_ip, args.port + 1)]


def whole(method, records: int) -> dict:
    """``piece=records`` where the transport cuts FIXED messages into pieces: one message each."""
    return {"piece": records} if "piece" in inspect.signature(method).parameters else {}


def sender(args) -> int:
    """Post every message (the first is the warm-up), say so, then answer READYs until all DONE."""
    from fullgraph.exchange.pinch.transport import Transport

    transport = Transport(0, addresses(args))
    try:
        cpu0 = time.thread_time()
        handles = []
        for i in range(args.messages + 1):
            values = message_values(args.seed, i, args.values)
            if args.mode == "udp":
                handles.append(transport.post_raw(1, values, KIND))
            else:
                posted = transport.post_fixed(1, values, KIND, **whole(transport.post_fixed, chunks(args.values)))
                handles.extend(posted if isinstance(posted, list) else [posted])
        post_cpu = time.thread_time() - cpu0
        print("posted", flush=True)
        t0, cpu0 = time.perf_counter(), time.thread_time()
        transport.complete(handles)
        transport.drain(lambda: True)
        s = transport.stats
        report = {
            "post_cpu_s": round(post_cpu, 3),
            "transmit_wall_s": round(time.perf_counter() - t0, 3),
            "transmit_cpu_s": round(time.thread_time() - cpu0, 3),
            "datagrams_sent": s.datagrams_sent,
            "retransmitted": s.retransmitted,
            "wire_bytes_sent": s.wire_bytes_sent,
        }
        print(json.dumps(report), flush=True)
    finally:
        transport.close()
    return 0


def _stdin_ready() -> bool:
    return bool(select.select([sys.stdin], [], [], 0)[0])


def receiver(args) -> int:
    """Take every message, check it, print one JSON line, then keep answering until told to stop."""
    from fullgraph.exchange.pinch.kernel import KernelAggregator, SyscallCounter
    from fullgraph.exchange.pinch.transport import Transport

    records = chunks(args.values)
    kernel = args.mode == "pinch-kernel"
    aggregator = None
    pid = os.getpid()
    with contextlib.ExitStack() as stack:
        if args.mode == "pinch-user":
            aggregation = Aggregation(AggregateArrays.in_memory(CHUNK), growable=True)
        elif kernel:
            aggregator = stack.enter_context(KernelAggregator(HOST_IF, records, (args.port, args.port + 2)))
            arrays = AggregateArrays(aggregator.aggregates, aggregator.arms, aggregator.seen, aggregator.state)
            aggregation = Aggregation(arrays)
        else:
            aggregation = None
        counter = stack.enter_context(SyscallCounter())
        counter.watch(pid)
        transport = Transport(1, addresses(args), aggregation=aggregation, kernel=kernel)
        stack.callback(transport.close)
        out = np.empty(args.values, dtype=np.float32)
        wall, syscalls, user, system, wrong = [], 0, 0.0, 0.0, []
        before = None
        run0 = (0, 0)
        for i in range(args.messages + 1):
            expected = message_values(args.seed, i, args.values)
            if i == 1:
                before = transport.stats.model_copy()
                run0 = aggregator.program_stats() if aggregator is not None else (0, 0)
            r0 = resource.getrusage(resource.RUSAGE_THREAD)
            c0 = counter.count(pid)
            t0 = time.perf_counter()
            if args.mode == "udp":
                transport.take_raw(0, out, KIND)
            else:
                result = transport.take_fixed([(0, records)], KIND, **whole(transport.take_fixed, records))
            t1 = time.perf_counter()
            c1 = counter.count(pid)
            r1 = resource.getrusage(resource.RUSAGE_THREAD)
            if args.mode == "udp":
                exact = np.array_equal(out.view(np.uint32), expected.view(np.uint32))
            else:
                # exact: the receiver holds precisely what the sender's records encode
                sent = contributions(to_records(expected)).reshape(-1)[: args.values]
                exact = (
                    np.array_equal(result["sum"].reshape(-1)[: args.values], sent)
                    and (result["count"] == 1).all()
                    and (result["flags"] == 0).all()
                )
            if not exact:
                wrong.append(i)
            if i >= 1:
                wall.append(t1 - t0)
                syscalls += c1 - c0 - 1  # c1's own map read is counted at its entry
                user += r1.ru_utime - r0.ru_utime
                system += r1.ru_stime - r0.ru_stime
        after = transport.stats
        run1 = aggregator.program_stats() if aggregator is not None else (0, 0)
        assert before is not None
        report = {
            "mode": args.mode,
            "messages": args.messages,
            "values_per_message": args.values,
            "records": args.messages * records,
            "take_wall_s": round(sum(wall), 4),
            "take_wall_s_median": round(statistics.median(wall), 5),
            "receive_cpu_s": round(after.receive_cpu_s - before.receive_cpu_s, 5),
            "getrusage_user_s": round(user, 5),
            "getrusage_system_s": round(system, 5),
            "xdp_run_time_ns": run1[0] - run0[0],
            "xdp_runs": run1[1] - run0[1],
            "syscalls": syscalls,
            "socket_calls": after.socket_calls - before.socket_calls,
            "datagrams_read": after.datagrams_received - before.datagrams_received,
            "wire_bytes_read": after.wire_bytes_received - before.wire_bytes_received,
            "duplicates": after.duplicates - before.duplicates,
            "nacks_sent": after.nacks_sent - before.nacks_sent,
            "readies_sent": after.readies_sent - before.readies_sent,
            "kernel_records": after.kernel_records - before.kernel_records,
            "exact": not wrong,
            "inexact_messages": wrong,
        }
        print(json.dumps(report), flush=True)
        transport.drain(_stdin_ready)  # a lost DONE is answered until the parent says stop
    return 0


# -- end to end: the parent ------------------------------------------------------------------------
@contextlib.contextmanager
def testbed(gbit: float, subnet: str) -> Iterator[str]:
    """A one-memory-host testbed, taken down however the block ends."""
    name = f"mbpr-{uuid.uuid4().hex[:6]}"
    up = [*TESTBED, "up", "--name", name, "--memory-hosts", "1", "--link-gbit", str(gbit)]
    try:
        done = subprocess.run([*up, "--subnet", subnet], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"testbed up failed ({done.returncode}): {done.stderr[-2000:]}")
        yield name
    finally:
        subprocess.run([*TESTBED, "down", "--name", name], capture_output=True, text=True)


def host_address(subnet: str, last: int) -> str:
    return ".".join(subnet.split("/")[0].split(".")[:3] + [str(last)])


def role_command(name: str, host: str, role: str, mode: str, args, sender_ip: str, receiver_ip: str) -> list[str]:
    return [
        "ip", "netns", "exec", f"{name}-{host}", sys.executable, str(SCRIPT), "--role", role, "--mode", mode,
        "--sender-ip", sender_ip, "--receiver-ip", receiver_ip, "--port", str(args.port),
        "--values", str(args.values), "--messages", str(args.messages), "--seed", str(args.seed),
    ]  # fmt: skip


def last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def run_mode(name: str, mode: str, args) -> dict:
    """One mode: the sender posts everything, then the receiver starts and takes it all."""
    sender_ip, receiver_ip = host_address(args.subnet, 10), host_address(args.subnet, 2)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": env}
    send = subprocess.Popen(role_command(name, "m0", "sender", mode, args, sender_ip, receiver_ip), **pipes)
    take = None
    try:
        assert send.stdout is not None
        if send.stdout.readline().strip() != "posted":
            _, err = send.communicate(timeout=CHILD_TIMEOUT_S)
            raise RuntimeError(f"{mode}: the sender failed: {err[-2000:]}")
        command = role_command(name, "l0", "receiver", mode, args, sender_ip, receiver_ip)
        take = subprocess.Popen(command, stdin=subprocess.PIPE, **pipes)
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while send.poll() is None and time.monotonic() < deadline:
            if take.poll() is not None:  # the receiver died: the sender would wait out its peer timeout
                send.kill()
                break
            time.sleep(0.05)
        send_out, send_err = send.communicate(timeout=CHILD_TIMEOUT_S)
        take_out, take_err = take.communicate(input="stop\n", timeout=CHILD_TIMEOUT_S)
        received, sent = last_json(take_out), last_json(send_out)
        if take.returncode != 0 or send.returncode != 0 or received is None or sent is None:
            raise RuntimeError(
                f"{mode}: receiver {take.returncode}: {take_err[-1500:]}; sender {send.returncode}: {send_err[-1500:]}"
            )
    finally:
        for process in (send, take):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    return figures(received, sent)


def figures(r: dict, sent: dict) -> dict:
    records = r["records"]
    user_ns = r["receive_cpu_s"] * 1e9 / records
    xdp_ns = r["xdp_run_time_ns"] / records
    return {
        "receiver": r,
        "sender": sent,
        "records_per_s": round(records / r["take_wall_s"]),
        "cpu_ns_per_record": {
            "user_space_thread": round(user_ns, 2),
            "xdp_program": round(xdp_ns, 2),
            "total": round(user_ns + xdp_ns, 2),
        },
        "per_message": {
            "syscalls": round(r["syscalls"] / r["messages"], 1),
            "socket_calls": round(r["socket_calls"] / r["messages"], 1),
            "datagrams_read": round(r["datagrams_read"] / r["messages"], 1),
            "xdp_runs": round(r["xdp_runs"] / r["messages"], 1),
            "take_wall_ms": round(r["take_wall_s"] * 1e3 / r["messages"], 2),
        },
        "exact": r["exact"],
    }


def end_to_end(args, modes: list[str]) -> dict:
    from fullgraph.exchange.pinch.kernel import BpfStats

    out: dict = {
        "link_gbit": args.link_gbit,
        "mtu": MTU,
        "messages": args.messages,
        "values_per_message": args.values,
        "records_per_message": chunks(args.values),
        "fixed_bytes_per_message": chunks(args.values) * RECORD.itemsize,
        "datagrams_per_message": {
            "udp": -(-args.values * 4 // ((MTU - 28 - HEADER.itemsize) // 8 * 8)),
            "pinch": -(-chunks(args.values) // RECORDS_PER_PACKET),
        },
        "xdp_mode": "generic",
        "modes": {},
    }
    with BpfStats(), testbed(args.link_gbit, args.subnet) as name:
        out["testbed"] = name
        for mode in modes:
            out["modes"][mode] = run_mode(name, mode, args)
    udp = out["modes"].get("udp")
    if udp:
        udp_ns = udp["cpu_ns_per_record"]["total"]
        out["ratios"] = {
            f"udp_over_{mode}_cpu_per_record": round(udp_ns / m["cpu_ns_per_record"]["total"], 2)
            for mode, m in out["modes"].items()
            if mode != "udp"
        }
        if "pinch-kernel" in out["modes"]:
            out["target_met"] = out["ratios"]["udp_over_pinch-kernel_cpu_per_record"] >= 5
    return out


# -- fixed point against float ---------------------------------------------------------------------
def gradient_like(rng: np.random.Generator, n: int) -> np.ndarray:
    """float32, normal with std 1e-3, with 0.1% of the values replaced by +-10^U(0, 3)."""
    x = rng.normal(0.0, 1e-3, n)
    large = rng.choice(n, max(1, n // 1000), replace=False)
    x[large] = np.where(rng.random(large.size) < 0.5, -1.0, 1.0) * 10.0 ** rng.uniform(0.0, 3.0, large.size)
    return x.astype(np.float32)


def error_part(contributions: list[int], values: int, seed: int) -> dict:
    rows = []
    for k in contributions:
        rng = np.random.default_rng([seed, k])
        fixed = np.zeros(values, dtype=np.int64)
        exact = np.zeros(values, dtype=np.float64)
        f32 = np.zeros(values, dtype=np.float32)
        bounds = np.zeros(values, dtype=np.float64)  # per value: the sum of its records' half steps
        saturated = 0
        for _ in range(k):
            x = gradient_like(rng, values)
            q, sat = quantize(x)
            shifts = np.repeat(to_records(x)["shift"].astype(np.float64), CHUNK)[:values]
            bounds += np.exp2(shifts - SCALE_BITS - 1)
            saturated += int(sat.sum())
            fixed += q
            exact += x.astype(np.float64)
            f32 += x  # sequential float32, as a chain of MPI sums in float32
        as64 = dequantize(fixed)
        errors = {
            "fixed_point": np.abs(as64 - exact),
            "fixed_point_as_float32": np.abs(as64.astype(np.float32).astype(np.float64) - exact),
            "float32_sequential": np.abs(f32.astype(np.float64) - exact),
        }
        rows.append(
            {
                "contributions": k,
                "bound_max": float(bounds.max()),
                "bound_for_records_below_one_half": sum_error_bound(k),
                **{name: {"max_abs": float(e.max()), "mean_abs": float(e.mean())} for name, e in errors.items()},
                "fixed_point_within_bound": bool((errors["fixed_point"] <= bounds).all()),
                "saturated_values": saturated,
                "max_abs_sum": float(np.abs(exact).max()),
            }
        )
    return {
        "values_per_vector": values,
        "inputs": "float32: normal(0, 1e-3), 0.1% replaced by +-10^U(0,3) (magnitudes 1-1000)",
        "reference": "the float64 sum of the same float32 inputs",
        "rows": rows,
    }


# -- main ------------------------------------------------------------------------------------------
def kernel_option(name: str) -> bool | None:
    """Whether the running kernel was built with ``name`` (None where /proc/config.gz is absent)."""
    try:
        with gzip.open("/proc/config.gz", "rt") as config:
            return any(line.strip() in (f"{name}=y", f"{name}=m") for line in config)
    except OSError:
        return None


def skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root for BPF, the testbed's namespaces and tc (run with sudo)"
    from fullgraph.exchange.pinch.kernel import bpf_available

    return bpf_available()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20_000, help="part 1: distinct frames, each run once")
    parser.add_argument("--values", type=int, default=1 << 20, help="part 2: float32 values per message")
    parser.add_argument("--messages", type=int, default=40, help="part 2: timed messages per mode (plus a warm-up)")
    parser.add_argument("--link-gbit", type=float, default=10.0, help="part 2: the testbed's link rate, Gbit/s")
    parser.add_argument("--modes", default=",".join(MODES), help="part 2: of " + ", ".join(MODES))
    parser.add_argument("--subnet", default="10.237.0.0/24", help="part 2: the testbed's /24")
    parser.add_argument("--port", type=int, default=47300, help="part 2: the sender's UDP port (receiver: +1)")
    parser.add_argument("--contributions", default="2,4,16,256", help="part 3: k values summed")
    parser.add_argument("--error-values", type=int, default=1 << 16, help="part 3: values per vector")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--role", choices=("sender", "receiver"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--sender-ip", help=argparse.SUPPRESS)
    parser.add_argument("--receiver-ip", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role == "sender":
        return sender(args)
    if args.role == "receiver":
        return receiver(args)
    if args.frames > 32768:
        parser.error("--frames: at most 32,768 (one sender's sequence window)")
    modes = [m for m in args.modes.split(",") if m]
    if unknown := set(modes) - set(MODES):
        parser.error(f"--modes: unknown {', '.join(sorted(unknown))}")

    started = time.perf_counter()
    machine = common.machine(kernel=os.uname().release, irq_time_accounting=kernel_option("CONFIG_IRQ_TIME_ACCOUNTING"))
    report: dict = {"benchmark": "pinch_records", "date": dt.date.today().isoformat(), "machine": machine}
    report["setting"] = {
        "record": f"{CHUNK} values as int32 mantissas and a shift, summed in int64 at 2^-32, {RECORD.itemsize} bytes",
        "records_per_datagram": RECORDS_PER_PACKET,
        "frames": args.frames,
        "values_per_message": args.values,
        "messages": args.messages,
        "link_gbit": args.link_gbit,
        "modes": modes,
        "contributions": [int(k) for k in args.contributions.split(",")],
        "error_values": args.error_values,
        "seed": args.seed,
    }
    report["notes"] = NOTES
    reason = skip_reason()
    if reason:
        report["test_run"] = report["end_to_end"] = {"skipped": reason}
    else:
        report["test_run"] = test_run_part(args.frames, args.port, args.seed)
        if args.output:
            common.save(report, args.output)
        report["end_to_end"] = end_to_end(args, modes)
        if args.output:
            common.save(report, args.output)
    report["fixed_point_error"] = error_part(report["setting"]["contributions"], args.error_values, args.seed)
    report["seconds"] = round(time.perf_counter() - started, 1)
    return common.emit(report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
