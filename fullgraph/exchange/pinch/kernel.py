"""PINCH's kernel programs as Python objects: load, attach, share memory, detach.

- :class:`KernelAggregator`: the XDP program that sums FIXED records into ``aggregates`` (its
  maps are numpy arrays over mmap, so user space arms, reads and resets without system calls);
- :class:`Broadcaster`: the TC egress program that clones one packet to every peer;
- :class:`FaultInjector`: TC loss and duplication for tests (this kernel has no netem);
- :class:`SyscallCounter`: system calls per process, for the benchmarks;
- :class:`BpfStats`: the kernel's run-time statistics of programs, on while it is open.

Everything attaches in the calling process's network namespace, and ``close()`` (idempotent,
also on ``with`` exit) removes exactly what the object added. Attachments are BPF links (XDP
links, and tcx links for the TC programs: Linux 6.6+), whose file descriptors this process owns:
when it dies, however it dies (MPI_ABORT's SIGKILL included), the kernel detaches every program
and frees it and its maps, so the next run finds the device free. No qdisc is ever added.
"""

from __future__ import annotations

import mmap
import os
import socket
import struct
from functools import cache
from importlib.resources import files
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

import numpy as np

from fullgraph.exchange.pinch import libbpf, wire
from fullgraph.exchange.pinch.errors import PinchError

BPF_DIR = Path(str(files("fullgraph.exchange.pinch") / "bpf"))
AGGREGATE_PROGRAM = "pinch_aggregate"
BROADCAST_PROGRAM = "pinch_broadcast"
FAULTS_PROGRAM = "pinch_faults"
SYSCOUNT_PROGRAM = "pinch_syscount"
PROBE_INTERFACE = "lo"  # bpf_available() attaches (and detaches) a throwaway program here
DEFAULT_FAULT_MARK = 0x50464C54  # "PFLT": duplicates carry it so they are not faulted again
PPM = 1_000_000
MAX_PORT = 0xFFFF

# Mirrors of the structs in bpf/pinch.h and bpf/faults.bpf.c that only this module writes.
PEER = struct.Struct("<I4s2s6s")  # struct pinch_peer: ifindex, ip (network order), port (network order), mac
BSTATE = struct.Struct("<IIQQ")  # struct pinch_bstate: count, mark, clones, errors
FAULTS = struct.Struct("<HHIIIIIQQQ")  # struct pinch_faults: ports, ppm, mark, ingress, pad, counters
KEY = struct.Struct("<I")
COUNT = struct.Struct("<Q")
MAC_BYTES = 6
assert PEER.size == 16 and BSTATE.size == 24 and FAULTS.size == 48

XdpMode = Literal["generic", "native"]
XDP_MODES = {"generic": libbpf.XDP_FLAGS_SKB_MODE, "native": libbpf.XDP_FLAGS_DRV_MODE}
Direction = Literal["egress", "ingress"]
TC_POINTS = {"egress": libbpf.BPF_TCX_EGRESS, "ingress": libbpf.BPF_TCX_INGRESS}


def port_range(ports: tuple[int, int]) -> tuple[int, int]:
    """``ports`` checked as a [lo, hi) range of u16s (the maps hold them as u16, so 65535 is never in)."""
    lo, hi = ports
    if not 0 <= lo <= hi <= MAX_PORT:
        raise PinchError(f"UDP port range [{lo}, {hi}): give 0 <= lo <= hi <= {MAX_PORT}")
    return lo, hi


def object_path(name: str) -> Path:
    return BPF_DIR / f"{name}.o"


def ifindex(interface: str) -> int:
    try:
        return socket.if_nametoindex(interface)
    except OSError:
        raise PinchError(f"no interface {interface!r} in this process's network namespace") from None


@cache
def bpf_available() -> str | None:
    """None where this process can load and attach PINCH's programs; else why not."""
    try:
        libbpf.lib()
        with KernelAggregator(PROBE_INTERFACE, 1, (0, 0)):
            pass
    except PinchError as exc:
        return str(exc)
    return None


class _Closing:
    """Context-manager plumbing shared by the objects below."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _close_mmap(mapped: mmap.mmap) -> None:
    """Unmap, unless a caller still holds a numpy view: then the mapping lives until that view goes."""
    try:
        mapped.close()
    except BufferError:
        pass


class KernelAggregator(_Closing):
    """The XDP aggregation program on one interface, its maps as numpy arrays.

    ``aggregates`` (capacity,) of :data:`wire.AGGREGATE`, ``arms`` (MAX_SENDERS,) of
    :data:`wire.ARM`, ``seen`` (MAX_SENDERS, WINDOW) uint32 and ``state`` (1,) of
    :data:`wire.STATE` are the kernel's memory: writes are seen by the next packet. ``attach=False``
    loads without attaching, for :meth:`test_run`.
    """

    def __init__(
        self,
        interface: str,
        capacity: int,
        ports: tuple[int, int],
        mode: XdpMode = "generic",
        *,
        attach: bool = True,
    ):
        if capacity < 1:
            raise PinchError(f"an aggregate array of {capacity} entries: give at least 1")
        if mode not in XDP_MODES:
            raise PinchError(f"XDP mode {mode!r}: use one of {', '.join(XDP_MODES)}")
        self.interface, self.mode = interface, mode
        self._link: int | None = None  # the XDP link's fd
        self._maps: list[mmap.mmap] = []
        self._object = libbpf.BpfObject(object_path("aggregate"))
        try:
            self._object.set_max_entries("aggregates", capacity)
            self._object.load()
            self.prog_fd = self._object.program_fd(AGGREGATE_PROGRAM)
            self.aggregates = self._array("aggregates", wire.AGGREGATE)
            self.arms = self._array("arms", wire.ARM)
            self.state = self._array("state", wire.STATE)
            seen = self._object.map("seen")
            mapped = seen.mmap()
            self._maps.append(mapped)
            # A u32 array map's values sit 8 bytes apart (the kernel rounds value sizes up to 8).
            stride = libbpf.MAP_VALUE_ALIGN
            self.seen = np.ndarray(
                (wire.MAX_SENDERS, wire.WINDOW), np.uint32, mapped, strides=(wire.WINDOW * stride, stride)
            )
            self.state["port_lo"], self.state["port_hi"] = port_range(ports)
            if attach:
                index = ifindex(interface)
                what = f"XDP ({mode}) on interface {interface}"
                try:
                    self._link = libbpf.link_create(self.prog_fd, index, libbpf.BPF_XDP, XDP_MODES[mode], what)
                except PinchError as exc:
                    if mode == "native":
                        raise PinchError(
                            f"{exc}; native XDP needs driver support and, on veth, an MTU of at most 3506 "
                            f"and XDP on the peer too: mode='generic' works on any device"
                        ) from None
                    raise
        except BaseException:
            self.close()
            raise

    def _array(self, name: str, dtype: np.dtype) -> np.ndarray:
        bpf_map = self._object.map(name)
        if bpf_map.value_size != dtype.itemsize:
            raise PinchError(f"map {name} holds {bpf_map.value_size}-byte values, wire.py {dtype.itemsize}: rebuild")
        mapped = bpf_map.mmap()
        self._maps.append(mapped)
        return np.frombuffer(mapped, dtype=dtype, count=bpf_map.max_entries)

    def program_stats(self) -> tuple[int, int]:
        """(run_time_ns, run_cnt) of the program so far (counted only while :class:`BpfStats` is on)."""
        info = libbpf.program_info(self.prog_fd, f"program {AGGREGATE_PROGRAM}")
        return info.run_time_ns, info.run_cnt

    def test_run(self, packet: bytes, repeat: int = 1) -> tuple[int, int]:
        """Run the program on one Ethernet frame in the kernel: (XDP action, mean ns per run)."""
        return libbpf.test_run(self.prog_fd, packet, repeat, f"program {AGGREGATE_PROGRAM}")

    def close(self) -> None:
        if self._link is not None:
            link, self._link = self._link, None
            os.close(link)  # the last reference to the link: the kernel detaches the program
        for mapped in self._maps:
            _close_mmap(mapped)
        self._maps = []
        self._object.close()


class _TcProgram(_Closing):
    """One TC program of one object attached at one tcx hook point of one interface, by a link.

    tcx runs before any clsact filters, beside whatever qdiscs the device has (the testbed's tbf
    stays); clones a program sends back into the same hook with ``bpf_clone_redirect`` re-enter it,
    as they would a clsact filter, so the programs guard them with ``skb->mark``.
    """

    def __init__(self, name: str, program: str, interface: str, direction: Direction):
        if direction not in TC_POINTS:
            raise PinchError(f"TC direction {direction!r}: use one of {', '.join(TC_POINTS)}")
        self.interface, self.ifindex, self.point = interface, ifindex(interface), TC_POINTS[direction]
        self.direction = direction
        self._link: int | None = None  # the tcx link's fd
        self._object = libbpf.BpfObject(object_path(name))
        try:
            self._object.load()
            self.prog_fd = self._object.program_fd(program)
        except BaseException:
            self._object.close()
            raise

    def _attach(self) -> None:
        """Attach (after the subclass has written its maps) at the front of the hook's tcx chain.

        The newest program runs first, as the newest clsact filter (automatic priority) did; in
        both a program's TC_ACT_OK ends the chain, so the order decides which program sees what.
        """
        what = f"tcx {self.direction} on interface {self.interface}"
        self._link = libbpf.link_create(self.prog_fd, self.ifindex, self.point, libbpf.BPF_F_BEFORE, what)

    def close(self) -> None:
        if self._link is not None:
            link, self._link = self._link, None
            os.close(link)  # the last reference to the link: the kernel detaches the program
        self._object.close()


Peer = tuple[int, str, int, bytes]  # (ifindex, IPv4 address, UDP port, MAC)


class Broadcaster(_TcProgram):
    """Clones every outgoing PINCH_F_BROADCAST packet on ``interface`` to each peer, then drops it.

    Clones carry ``mark`` (non-zero) and pass the program untouched. The program attaches at
    tcx egress, so no qdisc is added and the device's own (the testbed's tbf) stay as they are.
    """

    def __init__(self, interface: str, peers: list[Peer], mark: int):
        if not 0 < mark < 1 << 32:
            raise PinchError(f"broadcast mark {mark}: give a non-zero u32 (0 is every packet's mark)")
        if len(peers) > wire.MAX_PEERS:
            raise PinchError(f"{len(peers)} broadcast peers: at most {wire.MAX_PEERS}")
        super().__init__("broadcast", BROADCAST_PROGRAM, interface, "egress")
        try:
            peer_map, self._bstate = self._object.map("peers"), self._object.map("bstate")
            for i, (peer_ifindex, ip, port, mac) in enumerate(peers):
                if len(mac) != MAC_BYTES:
                    raise PinchError(f"peer {i}'s MAC {mac.hex(':')} is not {MAC_BYTES} bytes")
                value = PEER.pack(peer_ifindex, socket.inet_aton(ip), port.to_bytes(2, "big"), mac)
                peer_map.update(KEY.pack(i), value)
            self._bstate.update(KEY.pack(0), BSTATE.pack(len(peers), mark, 0, 0))
            self._attach()
        except BaseException:
            self.close()
            raise

    def counters(self) -> dict[str, int]:
        """Clones sent and failed clone/rewrite attempts so far."""
        value = self._bstate.lookup(KEY.pack(0))
        assert value is not None  # an array map has every index
        _, _, clones, errors = BSTATE.unpack(value)
        return {"clones": clones, "errors": errors}


class FaultInjector(_TcProgram):
    """Drops and duplicates UDP packets to ``ports`` [lo, hi) on one hook of ``interface``, at random."""

    def __init__(
        self,
        interface: str,
        direction: Direction = "egress",
        drop_ppm: int = 0,
        dup_ppm: int = 0,
        ports: tuple[int, int] = (0, MAX_PORT),
        mark: int = DEFAULT_FAULT_MARK,
    ):
        for name, ppm in (("drop_ppm", drop_ppm), ("dup_ppm", dup_ppm)):
            if not 0 <= ppm <= PPM:
                raise PinchError(f"{name}={ppm}: give parts per million, 0 to {PPM}")
        super().__init__("faults", FAULTS_PROGRAM, interface, direction)
        try:
            self._config = self._object.map("faults")
            lo, hi = port_range(ports)
            config = FAULTS.pack(lo, hi, drop_ppm, dup_ppm, mark, direction == "ingress", 0, 0, 0, 0)
            self._config.update(KEY.pack(0), config)
            self._attach()
        except BaseException:
            self.close()
            raise

    def counters(self) -> dict[str, int]:
        """Packets in the port range, and of those dropped and duplicated, so far."""
        value = self._config.lookup(KEY.pack(0))
        assert value is not None  # an array map has every index
        seen, dropped, duplicated = FAULTS.unpack(value)[-3:]
        return {"seen": seen, "dropped": dropped, "duplicated": duplicated}


class SyscallCounter(_Closing):
    """Counts the system calls of the processes given to :meth:`watch` (all their threads)."""

    def __init__(self) -> None:
        self._link: int | None = None
        self._object = libbpf.BpfObject(object_path("syscount"))
        try:
            self._object.load()
            self._watch, self._counts = self._object.map("watch"), self._object.map("counts")
            program = self._object.program(SYSCOUNT_PROGRAM)
            self._link = libbpf.attach_program(program, "raw tracepoint sys_enter")
        except BaseException:
            self.close()
            raise

    def watch(self, pid: int) -> None:
        self._watch.update(KEY.pack(pid), b"\x01")

    def count(self, pid: int) -> int:
        """System calls ``pid`` entered since it was watched."""
        value = self._counts.lookup(KEY.pack(pid))
        return 0 if value is None else COUNT.unpack(value)[0]

    def close(self) -> None:
        if self._link is not None:
            link, self._link = self._link, None
            libbpf.destroy_link(link)
        self._object.close()


class BpfStats(_Closing):
    """The kernel's per-program run time and run count, collected while this is open."""

    def __init__(self) -> None:
        self._fd: int | None = libbpf.enable_stats()

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


__all__ = [
    "BpfStats",
    "Broadcaster",
    "FaultInjector",
    "KernelAggregator",
    "PinchError",
    "SyscallCounter",
    "bpf_available",
]
