"""Loss and duplication on a link, for as long as this process runs: ``python -m fullgraph.exchange.pinch.faults``.

The kernels these jobs run on have no netem, so the TC program of :class:`~fullgraph.exchange.pinch.kernel.
FaultInjector` drops and clones UDP datagrams at random. Run it inside a host's network namespace
(``ip netns exec NS python -m fullgraph.exchange.pinch.faults --drop-ppm 10000``): it prints ``ready`` as
JSON once attached, holds the program until its standard input closes or it gets SIGTERM, then prints what it
dropped and duplicated as JSON (killed outright, the program goes with the process).
:func:`injecting` runs one such process in each of several namespaces for the length of a block.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator

from fullgraph.exchange.pinch.kernel import PPM, FaultInjector

STOP_TIMEOUT_S = 30  # for an injector to report its counters once its block has ended


@contextlib.contextmanager
def injecting(
    namespaces: list[str], drop_ppm: int, dup_ppm: int, ports: tuple[int, int]
) -> Iterator[list[dict[str, int]]]:
    """Loss and duplication on eth0's egress in each network namespace, for UDP ports
    ``[ports[0], ports[1])``, while the block runs; each injector's counters (seen, dropped,
    duplicated) are in the list once it has ended. A testbed job's end stops every process on its
    hosts: an injector it stops still reports (SIGTERM).

    Args:
        namespaces: The network namespaces (``ip netns``) whose eth0 egress is faulted.
        drop_ppm: Datagrams dropped per million sent.
        dup_ppm: Datagrams sent twice per million sent.
        ports: The UDP destination ports faulted: from ``ports[0]`` up to, not including,
            ``ports[1]``.
    """
    procs: list[subprocess.Popen] = []
    counters: list[dict[str, int]] = []
    try:
        for namespace in namespaces:
            command = [
                "ip", "netns", "exec", namespace, sys.executable, "-m", "fullgraph.exchange.pinch.faults",
                "--drop-ppm", str(drop_ppm), "--dup-ppm", str(dup_ppm), "--ports", str(ports[0]), str(ports[1]),
            ]  # fmt: skip
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append(proc)
            assert proc.stdout is not None
            if '"ready"' not in proc.stdout.readline():
                raise RuntimeError(f"the fault program did not attach in {namespace}")
        yield counters
    finally:
        for proc in procs:
            out, _ = proc.communicate(timeout=STOP_TIMEOUT_S)
            lines = out.strip().splitlines()
            if not lines or '"dropped"' not in lines[-1]:
                raise RuntimeError(f"a fault program ended without its counters (exit {proc.returncode}): {out!r}")
            counters.append(json.loads(lines[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interface", default="eth0")
    parser.add_argument("--direction", choices=("egress", "ingress"), default="egress")
    parser.add_argument("--drop-ppm", type=int, default=0, help=f"datagrams dropped per million (0-{PPM})")
    parser.add_argument("--dup-ppm", type=int, default=0, help=f"datagrams sent twice per million (0-{PPM})")
    parser.add_argument("--ports", type=int, nargs=2, default=(0, 65535), metavar=("LO", "HI"), help="[LO, HI)")
    args = parser.parse_args(argv)
    with FaultInjector(args.interface, args.direction, args.drop_ppm, args.dup_ppm, tuple(args.ports)) as faults:
        signal.signal(signal.SIGTERM, _stop)  # e.g. a testbed job's end stops every process of its hosts
        print(json.dumps({"ready": True}), flush=True)
        try:
            sys.stdin.read()
        except _Stopped:
            pass
        print(json.dumps(faults.counters()), flush=True)
    return 0


class _Stopped(Exception):
    """SIGTERM: stop injecting, and still say what was injected."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped


if __name__ == "__main__":
    raise SystemExit(main())
