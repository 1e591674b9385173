"""In-process cache: the embedded default, one per API process.

An ``OrderedDict`` kept in least-recently-used order, bounded by ``max_entries``. Expiry uses
the monotonic clock, so a wall-clock jump neither expires nor revives entries; expired
entries are dropped when touched, and crowded out by the LRU bound otherwise. Every method
runs without awaiting, so no lock is needed on one event loop.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from kernel.cache.base import Cache, check_ttl, check_value


class MemoryCache(Cache):
    """A bounded LRU dict with per-entry expiry."""

    def __init__(self, max_entries: int = 50_000, clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._clock = clock
        # key -> (value, deadline on the monotonic clock or None)
        self._entries: OrderedDict[str, tuple[str, float | None]] = OrderedDict()

    def describe(self) -> str:
        return f"memory (max {self.max_entries} entries)"

    def __len__(self) -> int:
        return len(self._entries)

    def _live(self, key: str) -> tuple[str, float | None] | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        deadline = entry[1]
        if deadline is not None and deadline <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry

    def _store(self, key: str, value: str, deadline: float | None) -> None:
        self._entries[key] = (value, deadline)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    async def get(self, key: str) -> str | None:
        """The value, or None when missing or expired; a hit counts as a use for the LRU."""
        entry = self._live(key)
        return self._counted(None if entry is None else entry[0])

    async def set(self, key: str, value: str, ttl: float | None = None) -> None:
        """Store ``value``, replacing the old value and its expiry."""
        check_value(value)
        check_ttl(ttl)
        self._store(key, value, None if ttl is None else self._clock() + ttl)

    async def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        self._entries.pop(key, None)

    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        """Add ``amount``; ``ttl`` is applied only if the key has no expiry yet (as on Redis)."""
        return self.add(key, amount, ttl)

    def add(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        """``incr`` without the ``await`` (a callback's)."""
        check_ttl(ttl)
        entry = self._live(key)
        current, deadline = (0, None) if entry is None else (entry[0], entry[1])
        try:
            value = int(current) + int(amount)
        except ValueError:
            raise ValueError(f"cache value under {key!r} is not an integer") from None
        if deadline is None and ttl is not None:
            deadline = self._clock() + ttl
        self._store(key, str(value), deadline)
        return value

    async def delete_prefix(self, prefix: str) -> int:
        """Remove live keys starting with ``prefix`` (expired ones go too, uncounted)."""
        now = self._clock()
        removed = 0
        for key in [k for k in self._entries if k.startswith(prefix)]:
            _, deadline = self._entries.pop(key)
            if deadline is None or deadline > now:
                removed += 1
        return removed
