"""Progress bars for long conversions and scans: rich bars on a terminal, silence elsewhere."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import track as rich_track

T = TypeVar("T")


def track(items: Iterable[T], description: str, total: int | None = None, enabled: bool | None = None) -> Iterator[T]:
    """Iterate with a progress bar on stderr when it is a terminal (or ``enabled`` says so)."""
    show = sys.stderr.isatty() if enabled is None else enabled
    if not show:
        yield from items
        return
    yield from rich_track(items, description=description, total=total, transient=True, console=Console(stderr=True))
