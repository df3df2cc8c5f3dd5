"""What the full-graph tests share: free UDP ports for the udp and pinch exchanges of MPI jobs."""

from __future__ import annotations

import socket


def free_port_range(n: int) -> int:
    """A port p with p..p+n-1 free for UDP right now (each rank binds port + rank)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("", 0))
            base = probe.getsockname()[1]
        if base + n > 65535 - 32:
            continue
        held = []
        try:
            for port in range(base, base + n):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                held.append(s)
                s.bind(("", port))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError(f"no {n} free UDP ports in a row")
