"""Small programs the testbed tests run on the emulated hosts (``python probes.py WHAT ...``); each
prints one JSON line, so a test reads facts from the host itself rather than from the testbed."""

from __future__ import annotations

import json
import mmap
import os
import random
import socket
import sys
import time


def tcp_receive(port: str) -> None:
    """Listen, say so, then count bytes from one sender until it closes: the rate it got."""
    with socket.create_server(("0.0.0.0", int(port))) as server:
        print(json.dumps({"listening": int(port)}), flush=True)
        conn, _ = server.accept()
        with conn:
            buf, total, first = bytearray(1 << 20), 0, None
            while n := conn.recv_into(buf):
                first = first or time.perf_counter()
                total += n
            seconds = time.perf_counter() - first
    print(json.dumps({"bytes": total, "seconds": seconds, "gbit_s": total * 8 / seconds / 1e9}), flush=True)


def tcp_send(host: str, port: str, seconds: str) -> None:
    data = b"\0" * (1 << 20)
    with socket.create_connection((host, int(port))) as conn:
        end = time.perf_counter() + float(seconds)
        while time.perf_counter() < end:
            conn.sendall(data)


def read_file(path: str) -> None:
    """Read a whole file with buffered 1 MiB reads: MB/s (10^6 bytes)."""
    start, total = time.perf_counter(), 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(1 << 20):
            total += len(chunk)
    seconds = time.perf_counter() - start
    print(json.dumps({"bytes": total, "seconds": seconds, "mb_s": total / seconds / 1e6}), flush=True)


def read_pages(path: str, seconds: str) -> None:
    """Random 4 KiB O_DIRECT reads for ``seconds``: I/Os per second."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    pages = os.fstat(fd).st_size // 4096
    page, rng, done = mmap.mmap(-1, 4096), random.Random(0), 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < float(seconds):
        os.preadv(fd, [page], rng.randrange(pages) * 4096)
        done += 1
    print(json.dumps({"ios": done, "seconds": elapsed, "iops": done / elapsed}), flush=True)


def where() -> None:
    """This process's network namespace (inode) and blkio group."""
    groups = dict(line.split(":", 2)[1:] for line in open("/proc/self/cgroup").read().splitlines())
    print(json.dumps({"netns": os.stat("/proc/self/ns/net").st_ino, "blkio": groups.get("blkio")}), flush=True)


def mpi_hello() -> None:
    """Every rank says where it runs; the first rank sends the last one 8 MB, and an allgather
    checks that collectives work across the hosts."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    groups = dict(line.split(":", 2)[1:] for line in open("/proc/self/cgroup").read().splitlines())
    me = {"rank": comm.rank, "netns": os.stat("/proc/self/ns/net").st_ino, "blkio": groups.get("blkio")}
    everyone = comm.allgather(me)
    buf = np.arange(1 << 20, dtype=np.float64) if comm.rank == 0 else np.empty(1 << 20)
    if comm.rank == 0:
        comm.Send(buf, dest=comm.size - 1)
    elif comm.rank == comm.size - 1:
        comm.Recv(buf, source=0)
        me["received_ok"] = bool((buf == np.arange(1 << 20)).all())
    me["allgather"] = len(everyone)
    print(json.dumps(me), flush=True)


def mpi_hang(segment: str) -> None:
    """Leave a named shared-memory segment behind, say so, and wait to be stopped."""
    import signal

    from mpi4py import MPI

    rank = MPI.COMM_WORLD.rank
    fd = os.open(f"/dev/shm/{segment}{rank}", os.O_CREAT | os.O_RDWR, 0o600)  # what shm_open does; never unlinked
    os.ftruncate(fd, 1 << 20)
    print(json.dumps({"ready": rank}), flush=True)
    signal.pause()


if __name__ == "__main__":
    globals()[sys.argv[1].replace("-", "_")](*sys.argv[2:])
