"""A bounded LRU of serialized responses.

A recommendation is a pure function of the request, the snapshot and the date (the snapshot's
age), and computing one prices hundreds of thousands of clusters; a dashboard asks the same
question again and again. Caching the response *bytes* makes a repeat cost a dict lookup and
guarantees the repeat is byte-identical.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable


class ResponseCache:
    """Least-recently-used bytes, bounded by entry count and by total size."""

    def __init__(self, max_entries: int = 512, max_bytes: int = 64 * 2**20):
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._items: OrderedDict[Hashable, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable) -> bytes | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: bytes) -> None:
        if len(value) > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= len(old)
            self._items[key] = value
            self._size += len(value)
            while len(self._items) > self.max_entries or self._size > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._size -= len(evicted)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size_bytes(self) -> int:
        return self._size
