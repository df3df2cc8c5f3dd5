"""Loss and duplication on a link, for as long as this process runs: ``python -m remotegnn.pinch.faults``.

The kernels these jobs run on have no netem, so the TC program of :class:`~remotegnn.pinch.kernel.
FaultInjector` drops and clones UDP datagrams at random. Run it inside a host's network namespace
(``ip netns exec NS python -m remotegnn.pinch.faults --drop-ppm 10000``): it prints ``ready`` as
JSON once attached, holds the program until its standard input closes or it gets SIGTERM, then prints what it
dropped and duplicated as JSON (killed outright, the program goes with the process).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from remotegnn.pinch.kernel import PPM, FaultInjector


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
