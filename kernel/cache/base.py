"""The cache contract: string values under string keys, with optional expiry.

Values are ``str``; callers JSON-encode what they store. The same semantics hold on every
backend (``tests/cache/test_cache_contract.py`` checks them):

- ``set`` replaces the value and its expiry (no ``ttl`` means no expiry);
- ``incr`` creates a missing key at ``amount``; its ``ttl`` applies only when the key has no
  expiry yet, so a counter created with a window keeps that window while it is incremented;
  a value that is not an integer raises ``ValueError``;
- ``bump`` adds 1 to each key it names, like ``incr`` without a ``ttl``;
- ``delete_prefix`` matches a plain string prefix (no glob characters) and returns the count.
"""

from __future__ import annotations

import abc


def check_ttl(ttl: float | None) -> float | None:
    """``ttl`` as given, or ``ValueError`` when it is not a positive number of seconds."""
    if ttl is not None and not ttl > 0:
        raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
    return ttl


def check_value(value: str) -> str:
    """``value`` as given, or ``TypeError`` when it is not a ``str``."""
    if not isinstance(value, str):
        raise TypeError(f"cache values are str (JSON-encode them), got {type(value).__name__}")
    return value


class Cache(abc.ABC):
    """A key/value cache shared by the kernel and plugins. All methods but ``describe`` are async.

    ``hits`` and ``misses`` count the reads of ``get`` (plain integers, shown on ``/metrics``).
    """

    hits = 0
    misses = 0
    # Whether every process of the deployment reads the same entries (Redis), so that a change
    # recorded by one process needs no repeating by the others when they hear of it.
    shared = False

    def _counted(self, value: str | None) -> str | None:
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    @abc.abstractmethod
    async def get(self, key: str) -> str | None:
        """The value stored under ``key``, or None when missing or expired."""

    @abc.abstractmethod
    async def set(self, key: str, value: str, ttl: float | None = None) -> None:
        """Store ``value`` under ``key`` for ``ttl`` seconds (None: until evicted or deleted)."""

    @abc.abstractmethod
    async def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""

    @abc.abstractmethod
    async def incr(self, key: str, amount: int = 1, ttl: float | None = None) -> int:
        """Add ``amount`` to the integer under ``key`` (missing counts as 0); the new value."""

    async def bump(self, *keys: str) -> None:
        """Add 1 to each of ``keys`` (generation counters, no expiry); backends that can do it
        in one round trip do."""
        for key in keys:
            await self.incr(key)

    @abc.abstractmethod
    async def delete_prefix(self, prefix: str) -> int:
        """Remove every key starting with ``prefix``; how many were removed."""

    async def check(self) -> str:
        """Health check: "ok" or an exception."""
        return "ok"

    async def close(self) -> None:
        """Release connections; the cache is not used afterwards."""
        return None

    @abc.abstractmethod
    def describe(self) -> str:
        """What backs the cache, for logs and health output (never credentials)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"
