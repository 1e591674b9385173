"""The other strategies: hot-counter (the kernel's cache), hll (Redis HyperLogLog, or the cache
without Redis) and cdc (hits in the durable log, rolled up by a consumer), each per site."""

from __future__ import annotations

from pageview_beacons import OTHER_BROWSER, beacon, stats, stats_when

from kernel.testing import Calls


async def test_strategies(svc_app, site, site_b, calls, calls_b, admin_headers):
    client = svc_app.client
    site_c = await svc_app.create_site(admin_headers, prefix="c", name="Site C")
    calls_c = Calls(client, {**admin_headers, "X-Svc-Site": site_c})
    await calls.ok("put", "/settings/pageviews", json={"value": {"strategy": "hot-counter"}})
    await calls_b.ok("put", "/settings/pageviews", json={"value": {"strategy": "hll", "hashSalt": "s" * 20}})
    await calls_c.ok("put", "/settings/pageviews", json={"value": {"strategy": "cdc"}})
    for target in (site, site_b, site_c):
        for path in ("/a", "/a", "/b"):
            assert (await beacon(client, target, path)).status_code == 204
        assert (await beacon(client, target, "/a", ua=OTHER_BROWSER)).status_code == 204
    # hot-counter and hll count at once; cdc once its consumer ran.
    assert await stats(client, calls.headers) == {"views": 4, "uniques": 2}
    assert await stats(client, calls.headers, "/a") == {"views": 3, "uniques": 2}
    # An authenticated hit: no consent store, so anonymous (the same visitor as its IP and UA)...
    auth = {"Authorization": calls.headers["Authorization"]}
    await beacon(client, site, "/a", headers=auth)
    assert await stats(client, calls.headers) == {"views": 5, "uniques": 2}
    # ... unless the site says consent is handled elsewhere: then it is the user's own visit.
    await calls.ok("put", "/settings/pageviews", json={"value": {"strategy": "hot-counter", "respectConsent": False}})
    await beacon(client, site, "/a", headers=auth)
    await beacon(client, site, "/a", headers=auth)
    assert await stats(client, calls.headers) == {"views": 7, "uniques": 3}
    # Another site's API key lends no user to A's counts: the kernel refuses it outside its site.
    key = await calls_b.ok("post", "/api-keys", 201, json={"name": "beacon"})
    resp = await beacon(client, site, "/a", headers={"Authorization": f"Bearer {key['key']}", "X-Svc-Site": site_b})
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    assert await stats(client, calls.headers) == {"views": 7, "uniques": 3}
    assert await stats(client, calls_b.headers) == {"views": 4, "uniques": 2}
    assert await stats(client, calls_b.headers, "/b") == {"views": 1, "uniques": 1}
    assert await stats_when(client, calls_c.headers, 4) == {"views": 4, "uniques": 2}
    assert await stats(client, calls_c.headers, "/a") == {"views": 3, "uniques": 2}
    # The hits are in C's change feed (thin: the path as the one field name, no IP).
    events = await calls_c.ok("get", "/cdc/events")
    hits = [e for e in events if e["type"] == "pageviews.hit"]
    assert len(hits) == 4 and hits[0]["fields"] == ["/a"] and len(hits[0]["itemId"]) == 32
    assert not [e for e in await calls.ok("get", "/cdc/events") if e["type"] == "pageviews.hit"]


async def test_hll_counts_in_the_cache_while_redis_refuses():
    from types import SimpleNamespace

    from kernel.cache import MemoryCache
    from kernel.testing import free_port
    from plugins.pageviews.counters import HllCounters

    kernel = SimpleNamespace(settings=SimpleNamespace(redis_url=f"redis://127.0.0.1:{free_port()}/0",
                                                      redis_namespace="t", redis_timeout=2.0),
                             cache=MemoryCache(), state={})
    counters = HllCounters(kernel)
    try:
        await counters.add("s1", "2026-11-26", "/a", "visitor-1")  # no 503: the beacon still counts
        await counters.add("s1", "2026-11-26", "/a", "visitor-2")
        assert await counters.read("s1", "2026-11-26", "/a") == (2, 2)
        assert counters.outage.up is False and kernel.state["redis_outages"] == [counters.outage]
    finally:
        await counters.close()
