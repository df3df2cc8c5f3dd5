"""Pure parsers for the text forms users type: comma-separated lists and HOST:PORT addresses.

They raise ``ValueError`` with a message that shows the expected form, so library code (a PyG
store's ``connect("host:port")``) raises what Python code expects, and the CLI kit
(:mod:`foundation.cli`) turns the same message into a usage error naming the option.
"""

from __future__ import annotations

from typing import NamedTuple

MAX_PORT = 65535


class HostPort(NamedTuple):
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_csv(text: str) -> list[str]:
    """'a, b,,c' -> ['a', 'b', 'c']: items stripped, empty items dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_int_list(text: str) -> list[int]:
    """'15,10,5' -> [15, 10, 5] (empty items dropped)."""
    try:
        return [int(item) for item in parse_csv(text)]
    except ValueError:
        raise ValueError(f"{text!r} is not a comma-separated list of integers such as 15,10,5") from None


def parse_host_port(text: str, *, allow_port_zero: bool = False) -> HostPort:
    """'host:port' or '[v6-host]:port' as (host, port); brackets are stripped from an IPv6 host.

    Port 0 (the OS picks a free port) makes sense for a server's listen address only, so it is
    refused unless ``allow_port_zero``.
    """
    host, sep, port = str(text).rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    lowest = 0 if allow_port_zero else 1
    if not sep or not host or not port.isdigit() or not lowest <= int(port) <= MAX_PORT:
        example = "127.0.0.1:7070 (port 0 picks a free one)" if allow_port_zero else "10.0.0.5:7700"
        raise ValueError(f"{text!r} is not HOST:PORT with a port from {lowest} to {MAX_PORT}, e.g. {example}")
    return HostPort(host, int(port))
