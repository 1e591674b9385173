"""The bounded per-site cache: LRU bound, TTL, per-site invalidation (directly and through the
bus), shared loads, the sizes setting checked at boot, and the counters on /metrics."""

from __future__ import annotations

import asyncio
import re

import pytest

from kernel import hookimpl
from kernel.app import build_kernel
from kernel.base.settings import Settings, SettingsError
from kernel.cache.sitecache import SiteCache, SiteCaches, SiteCacheSpec
from kernel.hooks.plugins import available_plugins
from kernel.messaging.bus import EventContext
from kernel.testing import METRICS_HEADERS


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(max_entries: int = 3, ttl: float = 10.0) -> tuple[SiteCache, Clock]:
    clock = Clock()
    return SiteCache("test", max_entries, ttl, clock=clock), clock


def test_the_least_recently_used_entry_goes_first():
    cache, _ = make(max_entries=3)
    for key in ("a", "b", "c"):
        cache.put("s1", key, key.upper())
    assert cache.get("s1", "a") == "A"  # a is now the most recent
    cache.put("s2", "d", "D")
    assert len(cache) == 3 and cache.evictions == 1
    assert not cache.contains("s1", "b")  # b was the least recently used
    assert [cache.get("s1", k) for k in ("a", "c")] == ["A", "C"]
    assert cache.keys("s1") and set(cache.keys("s1")) == {"a", "c"}
    for key in ("e", "f", "g"):  # the order is now d, a, c: three more evict them all
        cache.put("s2", key, key.upper())
    assert len(cache) == 3 and cache.evictions == 4
    assert cache.keys("s1") == []  # the per-site index follows evictions


def test_putting_an_existing_key_refreshes_it_without_growing():
    cache, clock = make(max_entries=2, ttl=5)
    cache.put("s1", "a", 1)
    cache.put("s1", "b", 2)
    clock.now += 4
    cache.put("s1", "a", 3)
    cache.put("s1", "c", 4)  # evicts b, not a
    assert cache.get("s1", "a") == 3 and not cache.contains("s1", "b") and cache.evictions == 1
    clock.now += 4  # a was stored 4 s ago: still fresh
    assert cache.get("s1", "a") == 3


def test_an_entry_older_than_the_ttl_is_a_miss_but_can_be_peeked():
    cache, clock = make(ttl=10)
    cache.put("s1", None, "v")
    clock.now += 9.9
    assert cache.get("s1") == "v"
    clock.now += 0.2
    assert cache.get("s1") is None
    assert cache.peek("s1") == "v"
    assert (cache.hits, cache.misses) == (1, 1)
    cache.ttl = 60  # the TTL is read at lookup: raising it makes the entry fresh again
    assert cache.get("s1") == "v"


def test_invalidating_a_site_leaves_the_others():
    cache, _ = make(max_entries=10)
    for site in ("s1", "s2"):
        for key in ("a", "b"):
            cache.put(site, key, f"{site}{key}")
    assert cache.invalidate("s1") == 2
    assert cache.keys("s1") == [] and set(cache.keys("s2")) == {"a", "b"}
    assert cache.invalidations == 2
    assert cache.invalidate("nobody") == 0
    cache.discard("s2", "a")
    assert cache.keys("s2") == ["b"]
    assert cache.invalidate(None) == 1 and len(cache) == 0


def test_resize_evicts_at_once_and_zero_disables():
    cache, _ = make(max_entries=5)
    for n in range(5):
        cache.put("s", n, n)
    cache.resize(2)
    assert len(cache) == 2 and cache.evictions == 3 and set(cache.keys("s")) == {3, 4}
    cache.resize(0)
    cache.put("s", "x", 1)
    assert len(cache) == 0 and cache.get("s", "x") is None


async def test_concurrent_misses_share_one_load():
    cache, _ = make()
    calls = []
    release = asyncio.Event()

    async def loader(stale):
        calls.append(stale)
        await release.wait()
        return "loaded"

    tasks = [asyncio.create_task(cache.get_or_load("s1", "k", loader)) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*tasks) == ["loaded"] * 5
    assert calls == [None]
    assert (cache.hits, cache.misses) == (0, 5)
    assert await cache.get_or_load("s1", "k", loader) == "loaded" and cache.hits == 1 and len(calls) == 1


async def test_a_failed_load_reaches_every_waiter_and_stores_nothing():
    cache, _ = make()
    release = asyncio.Event()
    calls = []

    async def loader(stale):
        calls.append(1)
        await release.wait()
        raise LookupError("database down")

    tasks = [asyncio.create_task(cache.get_or_load("s1", "k", loader)) for _ in range(3)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert [type(r) for r in results] == [LookupError] * 3 and len(calls) == 1
    assert not cache.contains("s1", "k")


async def test_a_cancelled_loader_lets_a_waiter_load_for_itself():
    cache, _ = make()
    started = asyncio.Event()
    calls = []

    async def slow(stale):
        calls.append("slow")
        started.set()
        await asyncio.sleep(3600)

    async def fast(stale):
        calls.append("fast")
        return "fast"

    leader = asyncio.create_task(cache.get_or_load("s1", "k", slow))
    await started.wait()
    waiter = asyncio.create_task(cache.get_or_load("s1", "k", fast))
    await asyncio.sleep(0)
    leader.cancel()
    assert await waiter == "fast"
    assert calls == ["slow", "fast"] and cache.peek("s1", "k") == "fast"


async def test_a_load_overtaken_by_an_invalidation_is_not_stored():
    cache, _ = make()
    release = asyncio.Event()

    async def loader(stale):
        await release.wait()
        return "read before the change"

    task = asyncio.create_task(cache.get_or_load("s1", "k", loader))
    await asyncio.sleep(0)
    cache.invalidate("s1")  # the data changed while the load was reading it
    release.set()
    assert await task == "read before the change"  # the caller still gets an answer
    assert not cache.contains("s1", "k")  # but the next one reads again


async def test_the_loader_gets_the_expired_value_to_revalidate():
    cache, clock = make(ttl=1)
    first = {"version": 1}
    await cache.get_or_load("s1", None, lambda stale: asyncio.sleep(0, first))
    clock.now += 2
    seen = []

    async def revalidate(stale):
        seen.append(stale)
        return stale

    assert await cache.get_or_load("s1", None, revalidate) is first
    assert seen == [first]
    assert cache.get("s1") is first  # stored fresh again


async def test_a_none_answer_is_not_stored():
    cache, _ = make()

    async def nothing(stale):
        return None

    assert await cache.get_or_load("s1", "unknown", nothing) is None
    assert not cache.contains("s1", "unknown")


def test_declarations_and_the_sizes_setting():
    caches = SiteCaches({"one": 7})
    one = caches.declare(SiteCacheSpec("one", max_entries=100, ttl=1.0))
    two = caches.declare(SiteCacheSpec("two", max_entries=50, ttl=1.0))
    assert (one.max_entries, two.max_entries) == (7, 50)
    assert caches["one"] is one and "two" in caches
    caches.check_sizes()
    with pytest.raises(ValueError, match="declared twice"):
        caches.declare(SiteCacheSpec("one", max_entries=1, ttl=1.0))
    with pytest.raises(ValueError, match="lower-case"):
        caches.declare(SiteCacheSpec("Bad Name", max_entries=1, ttl=1.0))
    typo = SiteCaches({"shcema": 10})
    typo.declare(SiteCacheSpec("schema", max_entries=1, ttl=1.0))
    with pytest.raises(SettingsError, match="SVC_SITE_CACHE_SIZES names unknown cache.*shcema.*known: schema"):
        typo.check_sizes()


@pytest.mark.parametrize("raw, message", [
    ("schema", "name=entries"),
    ("schema=lots", "not a whole number"),
    ("schema=-1", "negative"),
    ("schema=1,schema=2", "given twice"),
])
def test_a_bad_sizes_value_names_the_variable(tmp_path, raw, message):
    with pytest.raises(SettingsError, match=f"SVC_SITE_CACHE_SIZES=.*{message}"):
        Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path), "SVC_SITE_CACHE_SIZES": raw})


def test_the_kernel_declares_the_four_caches_and_applies_the_sizes(tmp_path):
    settings = Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path),
                                          "SVC_SITE_CACHE_SIZES": "schema=5, read_plans=0"})
    kernel = build_kernel(settings)
    caches = {c.name: c.max_entries for c in kernel.site_caches}
    assert set(caches) >= {"sites", "schema", "access", "read_plans"}
    assert caches["schema"] == 5 and caches["read_plans"] == 0 and caches["access"] == 20_000
    bad = Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path), "SVC_SITE_CACHE_SIZES": "nonsense=5"})
    with pytest.raises(SettingsError, match="SVC_SITE_CACHE_SIZES names unknown cache"):
        build_kernel(bad)


async def test_the_bus_invalidates_per_site(svc_app):
    kernel = svc_app.kernel
    caches = {name: kernel.site_caches[name] for name in ("sites", "schema", "access", "read_plans")}
    for cache in caches.values():
        for site in ("s1", "s2"):
            cache.put(site, "k", "v")
    ctx = EventContext(site_id="s1", kernel=kernel)
    await kernel.bus.action("access.changed", {"siteId": "s1"}, ctx)
    # access and read plans name access.changed; sites and schema do not.
    assert [n for n, c in caches.items() if not c.contains("s1", "k")] == ["access", "read_plans"]
    assert all(c.contains("s2", "k") for c in caches.values())
    await kernel.bus.action("access.changed", {"siteId": None}, ctx)  # every site
    assert not caches["access"].contains("s2", "k") and caches["schema"].contains("s2", "k")
    await kernel.bus.action("sites.changed", {"id": "s2", "op": "delete"}, EventContext(site_id=None))
    assert not any(c.contains("s2", "k") for c in caches.values())
    assert caches["sites"].contains("s1", "k")


def _sample(text: str, name: str, cache: str) -> float:
    found = re.search(rf'^{name}{{cache="{cache}"}} ([0-9.e+]+)$', text, re.M)
    assert found, f"{name} for {cache} is missing"
    return float(found.group(1))


async def test_metrics_show_the_counters(svc_app, admin_headers, site):
    headers = {**admin_headers, "X-Svc-Site": site}
    svc_app.kernel.site_caches["sites"].invalidate(site)
    before = await svc_app.client.get("/metrics", headers=METRICS_HEADERS)
    misses = _sample(before.text, "svc_site_cache_misses_total", "sites")
    hits = _sample(before.text, "svc_site_cache_hits_total", "sites")
    for _ in range(3):
        assert (await svc_app.client.get("/api/v1/collections", headers=headers)).status_code == 200
    text = (await svc_app.client.get("/metrics", headers=METRICS_HEADERS)).text
    assert _sample(text, "svc_site_cache_misses_total", "sites") == misses + 1  # the first request
    assert _sample(text, "svc_site_cache_hits_total", "sites") == hits + 2
    assert _sample(text, "svc_site_cache_entries", "sites") >= 1
    assert _sample(text, "svc_site_cache_max_entries", "schema") == svc_app.kernel.site_caches["schema"].max_entries
    for name in ("svc_site_cache_evictions_total", "svc_site_cache_invalidations_total"):
        assert _sample(text, name, "access") >= 0
    dropped = _sample(text, "svc_site_cache_invalidations_total", "sites")
    svc_app.kernel.site_caches["sites"].invalidate(site)
    text = (await svc_app.client.get("/metrics", headers=METRICS_HEADERS)).text
    assert _sample(text, "svc_site_cache_invalidations_total", "sites") == dropped + 1


class CountingPlugin:
    """The example of docs/writing_plugins.md: a plugin's own cache, declared by hook."""

    name = "counting_probe"

    @hookimpl
    def register_site_caches(self, kernel):
        return [SiteCacheSpec("note_counts", max_entries=5_000, ttl=30.0, invalidate_on=("notes.changed",),
                              doc="Notes per site.")]


async def test_a_plugin_declares_its_cache_and_its_event_drops_one_site(tmp_path):
    settings = Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path),
                                          "SVC_SITE_CACHE_SIZES": "note_counts=2"})
    kernel = build_kernel(settings, [*sorted(available_plugins()), CountingPlugin()])
    cache = kernel.site_caches["note_counts"]
    assert cache.max_entries == 2 and cache.ttl == 30.0

    async def count(stale):
        return 7

    assert await cache.get_or_load("s1", None, count) == 7
    cache.put("s2", None, 3)
    await kernel.bus.action("notes.changed", {"siteId": "s1"}, EventContext(site_id="s1", kernel=kernel))
    assert not cache.contains("s1") and cache.peek("s2") == 3
    assert not kernel.site_caches["schema"].invalidations  # other caches do not hear notes.changed
