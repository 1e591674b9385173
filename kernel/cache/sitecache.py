"""Bounded per-site caches: one LRU with a TTL per named cache, invalidated per site.

Every per-process cache of something derived from a site's data (the site record, its schema
snapshot, its access snapshots, the items plugin's read plans) is a ``SiteCache``:

- **bounded**: at most ``max_entries`` entries; the least recently used goes first
  (``SVC_SITE_CACHE_SIZES`` overrides a cache's bound; checked at boot);
- **a TTL**: an entry older than ``ttl`` seconds is a miss (its value stays readable through
  ``peek`` so a loader can revalidate it cheaply). The TTL bounds staleness where a bus
  message is lost (Redis or the node's broker down);
- **invalidated per site**: ``invalidate(site_id)`` drops a site's entries without walking the
  others; the kernel calls it for every cache on ``sites.changed`` and on the action events a
  cache names in ``invalidate_on`` (with Redis, the bus fans those out to every process);
- **counted**: hits, misses, evictions and invalidations per cache, on ``/metrics``.

The hot path is a dict lookup, a clock read and ``OrderedDict.move_to_end``. Everything runs on
the app's event loop, so there are no locks; ``get_or_load`` makes concurrent misses of one key
share a single load, and a load that an invalidation overtook is returned but not stored.

Caches are declared at boot (``register_site_caches`` hook, or the kernel's own
``KERNEL_SITE_CACHES``) and reached as ``kernel.site_caches["schema"]``.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kernel.base.settings import CACHE_NAME_CHARS as NAME_CHARS
from kernel.base.settings import SettingsError

V = TypeVar("V")
SIZES_ENV = "SVC_SITE_CACHE_SIZES"
SITE_EVENT = "sites.changed"


@dataclass(frozen=True)
class SiteCacheSpec:
    """The declaration of one named cache.

    ``name``: lower-case letters, digits and ``_`` (the ``cache`` label on ``/metrics`` and the key
    in ``SVC_SITE_CACHE_SIZES``). ``max_entries``: the default bound. ``ttl``: seconds an entry is
    trusted. ``invalidate_on``: action events whose payload ``siteId`` names the site to drop (a
    payload without a string ``siteId`` drops every site). ``doc``: one line for operators.
    """

    name: str
    max_entries: int
    ttl: float
    invalidate_on: tuple[str, ...] = ()
    doc: str = ""


class _Entry(Generic[V]):
    __slots__ = ("stored_at", "value")

    def __init__(self, value: V, stored_at: float) -> None:
        self.value = value
        self.stored_at = stored_at


class SiteCache(Generic[V]):
    """One bounded LRU of ``(site_id, key) -> value`` with a TTL and per-site invalidation."""

    def __init__(self, name: str, max_entries: int, ttl: float, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 0:
            raise ValueError("max_entries must not be negative")
        self.name = name
        self.max_entries = max_entries
        self.ttl = ttl
        self._clock = clock
        self._data: OrderedDict[tuple[str, Hashable], _Entry[V]] = OrderedDict()
        self._by_site: dict[str, set[Hashable]] = {}
        self._loading: dict[tuple[str, Hashable], asyncio.Future[V]] = {}
        # Loads in flight when their site was invalidated: they must not store what they read.
        self._overtaken: set[asyncio.Future[V]] = set()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.invalidations = 0

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"<SiteCache {self.name} {len(self._data)}/{self.max_entries} ttl={self.ttl}>"

    # ------------------------------------------------------------------ reading

    def get(self, site_id: str, key: Hashable = None, default: Any = None) -> V | Any:
        """The fresh value of ``(site_id, key)``, or ``default`` (counted as a hit or a miss)."""
        entry = self._fresh((site_id, key))
        return default if entry is None else entry.value

    def _fresh(self, k: tuple[str, Hashable]) -> _Entry[V] | None:
        """The fresh entry of ``k`` moved to the LRU's end, or ``None``; counts the hit or miss."""
        entry = self._data.get(k)
        if entry is None or self._clock() - entry.stored_at >= self.ttl:
            self.misses += 1
            return None
        try:
            self._data.move_to_end(k)
        except KeyError:  # dropped between the two lines by another thread; still a valid answer
            pass
        self.hits += 1
        return entry

    def peek(self, site_id: str, key: Hashable = None, default: Any = None) -> V | Any:
        """The stored value even when expired, without counting or touching its LRU position."""
        entry = self._data.get((site_id, key))
        return default if entry is None else entry.value

    def contains(self, site_id: str, key: Hashable = None) -> bool:
        """Whether an entry (fresh or expired) is stored for ``(site_id, key)``."""
        return (site_id, key) in self._data

    def keys(self, site_id: str) -> list[Hashable]:
        """The keys stored for one site (tests, diagnostics)."""
        return list(self._by_site.get(site_id, ()))

    # ------------------------------------------------------------------ writing

    def put(self, site_id: str, key: Hashable, value: V) -> None:
        """Store ``value`` as fresh, evicting the least recently used entries above the bound."""
        if self.max_entries == 0:
            return
        k = (site_id, key)
        data = self._data
        if k in data:
            data.move_to_end(k)
        else:
            self._by_site.setdefault(site_id, set()).add(key)
        data[k] = _Entry(value, self._clock())
        self._evict_above(self.max_entries)

    def _evict_above(self, bound: int) -> None:
        """Evict least recently used entries until at most ``bound`` remain."""
        while len(self._data) > bound:
            (old_site, old_key), _ = self._data.popitem(last=False)
            self._unindex(old_site, old_key)
            self.evictions += 1

    def _unindex(self, site_id: str, key: Hashable) -> None:
        keys = self._by_site.get(site_id)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_site[site_id]

    def discard(self, site_id: str, key: Hashable = None) -> None:
        """Drop one entry (an in-flight load of it may still store its answer)."""
        if self._data.pop((site_id, key), None) is not None:
            self._unindex(site_id, key)
            self.invalidations += 1

    def invalidate(self, site_id: str | None = None) -> int:
        """Drop every entry of ``site_id`` (``None``: of every site); returns how many."""
        if site_id is None:
            dropped = len(self._data)
            self._data.clear()
            self._by_site.clear()
            self._overtaken.update(self._loading.values())
            self._loading.clear()
        else:
            keys = self._by_site.pop(site_id, ())
            for key in keys:
                self._data.pop((site_id, key), None)
            dropped = len(keys)
            if self._loading:
                for k in [k for k in self._loading if k[0] == site_id]:
                    self._overtaken.add(self._loading.pop(k))
        self.invalidations += dropped
        return dropped

    def resize(self, max_entries: int) -> None:
        """Change the bound, evicting at once when it shrinks."""
        if max_entries < 0:
            raise ValueError("max_entries must not be negative")
        self.max_entries = max_entries
        self._evict_above(max_entries)

    # ------------------------------------------------------------------ loading

    async def get_or_load(self, site_id: str, key: Hashable,
                          loader: Callable[[V | None], Awaitable[V]], *, store: bool = True) -> V:
        """The fresh value, else ``await loader(stale)`` and store its answer.

        ``stale`` is the expired value (or ``None``): a loader may return that very object
        after a cheap check (a version number) instead of reading everything again. Concurrent
        misses of one key wait for the same load; its exception reaches all of them. A
        ``None`` answer is returned but not stored; so is every answer with ``store=False``.
        """
        k = (site_id, key)
        fresh = self._fresh(k)
        if fresh is not None:
            return fresh.value
        entry = self._data.get(k)  # expired, or None: what the loader may revalidate
        loop = asyncio.get_running_loop()
        while True:
            pending = self._loading.get(k)
            if pending is None or pending.get_loop() is not loop:
                break
            try:
                return await asyncio.shield(pending)
            except _LoadAbandoned:
                continue  # the loading task was cancelled; this caller loads itself
        future: asyncio.Future[V] = loop.create_future()
        self._loading[k] = future
        try:
            value = await loader(None if entry is None else entry.value)
        except BaseException as exc:
            if self._loading.get(k) is future:
                del self._loading[k]
            self._overtaken.discard(future)
            future.set_exception(exc if isinstance(exc, Exception) else _LoadAbandoned())
            future.exception()  # retrieved: no "never retrieved" warning when nobody waited
            raise
        if self._loading.get(k) is future:
            del self._loading[k]
        if future in self._overtaken:
            self._overtaken.discard(future)
        elif store and value is not None:
            self.put(site_id, key, value)
        future.set_result(value)
        return value

    # ------------------------------------------------------------------ numbers

    def stats(self) -> dict[str, Any]:
        """Counters and size, as shown on ``/metrics``."""
        return {"name": self.name, "entries": len(self._data), "max_entries": self.max_entries,
                "ttl": self.ttl, "hits": self.hits, "misses": self.misses,
                "evictions": self.evictions, "invalidations": self.invalidations,
                "sites": len(self._by_site)}


class _LoadAbandoned(Exception):
    """The task loading a key was cancelled; whoever waited on it loads for itself."""


class SiteCaches:
    """The app's named caches: ``kernel.site_caches["schema"]``."""

    def __init__(self, sizes: dict[str, int] | None = None) -> None:
        self._caches: dict[str, SiteCache[Any]] = {}
        self.specs: dict[str, SiteCacheSpec] = {}
        self.sizes = dict(sizes or {})

    def __getitem__(self, name: str) -> SiteCache[Any]:
        return self._caches[name]

    def __contains__(self, name: str) -> bool:
        return name in self._caches

    def __iter__(self) -> Iterator[SiteCache[Any]]:
        return iter(list(self._caches.values()))

    def declare(self, spec: SiteCacheSpec) -> SiteCache[Any]:
        """Create the cache ``spec`` describes; its bound is the setting's, else the spec's."""
        if not spec.name or not set(spec.name) <= NAME_CHARS:
            raise ValueError(f"site cache name {spec.name!r}: use lower-case letters, digits and _")
        if spec.name in self._caches:
            raise ValueError(f"site cache {spec.name!r} is declared twice")
        if spec.ttl <= 0 or spec.max_entries < 0:
            raise ValueError(f"site cache {spec.name!r}: ttl must be positive and max_entries not negative")
        cache: SiteCache[Any] = SiteCache(spec.name, self.sizes.get(spec.name, spec.max_entries), spec.ttl)
        self._caches[spec.name] = cache
        self.specs[spec.name] = spec
        return cache

    def check_sizes(self) -> None:
        """At boot, after every declaration: a size for an unknown cache is a typo; fail."""
        unknown = sorted(set(self.sizes) - set(self._caches))
        if unknown:
            known = ", ".join(sorted(self._caches)) or "none"
            raise SettingsError(f"{SIZES_ENV} names unknown cache(s) {', '.join(unknown)} (known: {known})")

    def invalidate_site(self, site_id: str | None) -> None:
        """Drop one site's entries (``None``: everything) from every cache."""
        for cache in self:
            cache.invalidate(site_id)

    def subscribe(self, bus: Any) -> None:
        """Invalidate on the bus: ``sites.changed`` for every cache, ``invalidate_on`` per cache."""
        def on_site(event: str, payload: Any, ctx: Any) -> None:
            site_id = payload.get("id") if isinstance(payload, dict) else None
            if isinstance(site_id, str):
                self.invalidate_site(site_id)

        bus.on_action(SITE_EVENT, on_site, priority=0)
        by_event: dict[str, list[SiteCache[Any]]] = {}
        for name, spec in self.specs.items():
            for event in spec.invalidate_on:
                by_event.setdefault(event, []).append(self._caches[name])
        for event, caches in by_event.items():
            bus.on_action(event, _invalidator(caches), priority=0)


def _invalidator(caches: Iterable[SiteCache[Any]]) -> Callable[[str, Any, Any], None]:
    targets = list(caches)

    def handler(event: str, payload: Any, ctx: Any) -> None:
        site_id = payload.get("siteId") if isinstance(payload, dict) else None
        for cache in targets:
            cache.invalidate(site_id if isinstance(site_id, str) else None)

    return handler
