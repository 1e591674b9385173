"""The snapshot cache: reused while the version stands, dropped by ``schema.changed`` on this
worker and (through Redis) on the others, and bounded by a TTL where there is no Redis."""

from __future__ import annotations

import asyncio

from plugins.schema import api, cache


async def _admin(app):
    token = await app.login()
    return {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"}


async def _create(app, headers, name):
    resp = await app.client.post("/api/v1/collections", json={"name": name}, headers=headers)
    assert resp.status_code == 201, resp.text


async def test_one_worker_reuses_and_drops_its_snapshot(svc_app, calls, site):
    kernel = svc_app.kernel
    await calls.collection("a")
    first = await api.get_schema(kernel, site)
    assert await api.get_schema(kernel, site) is first
    await calls.field("a", "x", "string")
    second = await api.get_schema(kernel, site)
    assert second is not first and second.version == first.version + 1
    assert second.field("a", "x").type == "string"
    api.forget_cached(kernel, site)
    assert (await api.get_schema(kernel, site)) == second


async def test_after_the_ttl_only_the_version_is_checked(svc_app, calls, site):
    snapshots = cache.snapshots(svc_app.kernel)
    snapshots.ttl = 1e-9  # every lookup is a miss that revalidates
    await calls.collection("a")
    first = await api.get_schema(svc_app.kernel, site)
    misses = snapshots.misses
    assert await api.get_schema(svc_app.kernel, site) is first  # same version: same object
    assert snapshots.misses == misses + 1


async def test_second_worker_without_redis_catches_up_after_the_ttl(make_app, tmp_path):
    one = await make_app(data_dir=tmp_path / "shared", redis_url="")  # no bus between them
    two = await make_app(data_dir=tmp_path / "shared", redis_url="")
    headers = await _admin(one)
    await _create(one, headers, "a")
    stale = await api.get_schema(two.kernel, "default")
    await _create(one, headers, "b")
    assert await api.get_schema(two.kernel, "default") is stale  # within the TTL: no query at all
    cache.snapshots(two.kernel).ttl = 0.05
    await asyncio.sleep(0.06)
    fresh = await api.get_schema(two.kernel, "default")
    assert set(fresh.collections) == {"a", "b"} and fresh.version == stale.version + 1


async def test_second_worker_with_redis_hears_the_change(make_app, tmp_path, redis_url):
    one = await make_app(data_dir=tmp_path / "shared", redis_url=redis_url)
    two = await make_app(data_dir=tmp_path / "shared", redis_url=redis_url)
    cache.snapshots(two.kernel).ttl = 3600.0  # only the bus can make it fresh
    headers = await _admin(one)
    await _create(one, headers, "a")
    before = await api.get_schema(two.kernel, "default")
    heard = asyncio.Event()
    two.kernel.bus.on_action("schema.changed", lambda e, p, c: heard.set() if c.remote else None)
    await _create(one, headers, "b")
    await asyncio.wait_for(heard.wait(), 5)
    after = await api.get_schema(two.kernel, "default")
    assert after.version == before.version + 1 and "b" in after.collections


def test_an_old_message_does_not_evict_a_newer_snapshot(svc_app):
    from plugins.schema.snapshot import SchemaSnapshot

    kernel = svc_app.kernel
    snapshots = cache.snapshots(kernel)
    handler = cache.on_schema_changed(kernel)
    snapshots.put("s1", None, SchemaSnapshot("s1", 5))
    handler("schema.changed", {"siteId": "s1", "version": 4}, None)
    assert snapshots.contains("s1")
    handler("schema.changed", {"siteId": "s1", "version": 6}, None)
    assert not snapshots.contains("s1")


async def test_a_deleted_site_leaves_every_cache(svc_app):
    from kernel.messaging.bus import EventContext
    from plugins.schema.snapshot import SchemaSnapshot

    snapshots = cache.snapshots(svc_app.kernel)
    snapshots.put("s1", None, SchemaSnapshot("s1", 5))
    snapshots.put("s2", None, SchemaSnapshot("s2", 5))
    await svc_app.kernel.bus.action("sites.changed", {"id": "s1", "op": "delete"}, EventContext(site_id=None))
    assert not snapshots.contains("s1") and snapshots.contains("s2")
