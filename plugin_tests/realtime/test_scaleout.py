"""Two app processes sharing the database and Redis: a write on A reaches a socket held by B."""

from __future__ import annotations

from kernel.testing import Calls
from plugin_tests.realtime.helpers import connect, frame, subscribe, ticket
from plugins.realtime import api


async def test_a_write_on_one_worker_reaches_a_socket_on_another(make_app, live_server, redis_url):
    env = {"SVC_REDIS_URL": redis_url}
    worker_a = await make_app(env=env)
    worker_b = await make_app(env=env, data_dir=worker_a.kernel.settings.data_path)
    assert worker_a.kernel.topics.node_id != worker_b.kernel.topics.node_id
    server_b = await live_server(worker_b)
    headers = {"Authorization": f"Bearer {await worker_a.login()}"}
    site = await worker_a.create_site(headers)
    on_a = Calls(worker_a.client, {**headers, "X-Svc-Site": site})
    await on_a.collection("posts", {"title": "string"})
    async with connect(server_b, await ticket(on_a)) as ws:  # minted on A, redeemed on B
        assert (await subscribe(ws, "posts"))["type"] == "subscribed"
        item = await on_a.create("posts", {"title": "from A"})
        assert await frame(ws) == {"type": "event", "collection": "posts", "action": "create",
                                   "itemId": item["id"], "payload": None}
        note = await api.notify(worker_a.kernel, site, kind="k", title="from A")
        assert await frame(ws) == {"type": "notification", "notification": note}
