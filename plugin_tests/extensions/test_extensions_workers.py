"""Two workers sharing the database and the Redis bus: enabling, disabling and uninstalling on one
loads and unloads the extension on the other, without a restart. Without Redis, the other worker
follows at its next poll (SVC_EXT_SYNC_SECONDS)."""

from __future__ import annotations

import asyncio

from extension_bundles import ENV, enable, install, route_extension

from kernel.app import database_url
from kernel.testing import Calls


async def _status(client, site: str, name: str = "fanned") -> int:
    return (await client.get(f"/api/v1/ext/{name}/ping", headers={"X-Svc-Site": site})).status_code


async def _until(client, site: str, status: int, name: str = "fanned", tries: int = 200) -> int:
    """The other worker's answer once the change reached it (pub/sub and polls are asynchronous)."""
    found = await _status(client, site, name)
    for _ in range(tries):
        if found == status:
            break
        await asyncio.sleep(0.02)
        found = await _status(client, site, name)
    return found


async def test_enable_and_disable_reach_every_worker(make_app, redis_url, tmp_path):
    one = await make_app(env={**ENV, "SVC_REDIS_URL": redis_url})
    two = await make_app(env={**ENV, "SVC_REDIS_URL": redis_url, "SVC_DATABASE_URL": database_url(one.kernel.settings)})
    assert one.kernel.bus.redis_connected and two.kernel.bus.redis_connected
    admin = {"Authorization": f"Bearer {await one.login()}"}
    site = await one.create_site(admin)
    calls = Calls(one.client, {**admin, "X-Svc-Site": site})
    ext = await install(one.client, admin, route_extension(tmp_path, "fanned"))
    assert await _status(two.client, site) == 404
    await enable(calls, ext["id"], ["routes"])
    assert await _until(two.client, site, 200) == 200
    assert two.kernel.extension_routes.owners() == ["fanned"]
    await calls.ok("post", f"/extensions/{ext['id']}/disable")
    assert await _until(two.client, site, 404) == 404
    assert two.kernel.extension_routes.owners() == []
    # Enabled again, then uninstalled on worker one: gone on worker two as well.
    await calls.ok("post", f"/extensions/{ext['id']}/enable")
    assert await _until(two.client, site, 200) == 200
    await calls.ok("delete", f"/extensions/{ext['id']}", status=204)
    assert await _until(two.client, site, 404) == 404
    assert not two.kernel.state["extensions.runtime"].loaded


async def test_without_redis_workers_follow_by_polling(make_app, tmp_path):
    one = await make_app(env={**ENV, "SVC_REDIS_URL": "", "SVC_EXT_SYNC_SECONDS": "1"})
    two = await make_app(env={**ENV, "SVC_REDIS_URL": "", "SVC_EXT_SYNC_SECONDS": "1",
                              "SVC_DATABASE_URL": database_url(one.kernel.settings)})
    assert two.kernel.state["extensions.runtime"].poller is not None
    admin = {"Authorization": f"Bearer {await one.login()}"}
    site = await one.create_site(admin)
    calls = Calls(one.client, {**admin, "X-Svc-Site": site})
    ext = await install(one.client, admin, route_extension(tmp_path, "polled"))
    await enable(calls, ext["id"], ["routes"])
    assert await _until(two.client, site, 200, "polled", tries=300) == 200
    await calls.ok("post", f"/extensions/{ext['id']}/disable")
    assert await _until(two.client, site, 404, "polled", tries=300) == 404
