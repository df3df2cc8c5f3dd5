"""Recording what ``remotegnn.cache.direct`` reads, with its windows and pieces shrunk to test size."""

from __future__ import annotations

import os

import pytest

from remotegnn.cache import direct


def record_reads(monkeypatch: pytest.MonkeyPatch, window: int, piece: int | None = None) -> list[tuple[int, int]]:
    """Windows of ``window`` bytes and pieces of ``piece`` (default: unchanged); returns the list
    every later read is appended to, as (offset, bytes asked)."""
    monkeypatch.setattr(direct, "WINDOW_BYTES", window)
    if piece is not None:
        monkeypatch.setattr(direct, "PIECE_BYTES", piece)
    reads: list[tuple[int, int]] = []
    preadv = os.preadv

    def recorded(fd: int, buffers: list, offset: int) -> int:
        reads.append((offset, sum(len(b) for b in buffers)))
        return preadv(fd, buffers, offset)

    monkeypatch.setattr(direct.os, "preadv", recorded)
    return reads
