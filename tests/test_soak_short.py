"""A short soak (issue 27): the mix of ``bench/soak.py`` against one app under uvicorn, for a
bounded number of rounds. Item reads and writes, GraphQL, change-feed pulls, a realtime socket
opened again with a fresh ticket every few rounds, and a webhook subscription delivering to a
local receiver. No 5xx, no file descriptors left behind, every write's frame on the socket and
every item event at the receiver. No speed is asserted (the minutes-long run is the bench)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from kernel.testing import Calls

KEY = "c29hay10ZXN0LWtleS1vZi0zMi1ieXRlcy1sb25nISE="  # base64 of 32 bytes, tests only
ROUNDS = 24
RECONNECT_EVERY = 6
FD_SLACK = 8  # pooled connections opened late and sockets closing: a leak grows with the rounds
GRAPHQL = {"query": "{ posts(limit: 5, sort: [\"-views\"]) { id title views } }"}


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def next_event(ws: Any) -> dict[str, Any]:
    while True:  # a deadline, not a speed bound
        got = await asyncio.wait_for(ws.receive_json(), 10)
        if got.get("type") == "event":
            return dict(got)


async def test_a_short_soak_of_the_whole_mix(make_app: Any, live_server: Any, http_receiver: Any):
    app = await make_app(env={"SVC_ENCRYPTION_KEY": KEY})
    server = await live_server(app)
    http = server.client
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    headers = {**admin, "X-Svc-Site": site}
    calls = Calls(http, headers)
    await calls.collection("posts", {"title": "string", "views": "integer"})
    ids = [row["id"] for row in await calls.create("posts", [{"title": f"Seed {n}", "views": n} for n in range(5)])]
    hook = http_receiver.serve("/hook", {"ok": True})
    await calls.ok("post", "/cdc/subscriptions", 201, json={
        "name": "soak", "kind": "webhook", "url": hook, "secret": "soak-secret-0123456789", "collections": ["posts"]})
    cursor = (await calls.ok("get", "/cdc/events", full=True, params={"limit": 500}))["meta"]["nextCursor"]

    statuses: list[int] = []
    written: set[str] = set()  # item event ids read from the change feed
    frames = writes = 0
    fds_after_first_round = 0
    ws_cm = ws = None
    for n in range(ROUNDS):
        if n % RECONNECT_EVERY == 0:  # a fresh ticket and socket: closing one must free everything
            if ws_cm is not None:
                await ws_cm.__aexit__(None, None, None)
            ticket = (await calls.ok("post", "/realtime/ticket"))["ticket"]
            ws_cm = server.ws("/api/v1/realtime", params={"ticket": ticket})
            ws = await ws_cm.__aenter__()
            await ws.send_json({"type": "subscribe", "collection": "posts"})
            assert (await asyncio.wait_for(ws.receive_json(), 10))["type"] == "subscribed"
        if n % 3 == 0:
            resp = await http.post("/api/v1/items/posts", json={"title": f"Soak {n}", "views": n}, headers=headers)
            if resp.status_code == 201:
                ids.append(resp.json()["data"]["id"])
        else:
            resp = await http.patch(f"/api/v1/items/posts/{ids[n % len(ids)]}", json={"views": n}, headers=headers)
        statuses.append(resp.status_code)
        writes += 1
        event = await next_event(ws)  # each write's frame reaches the subscribed socket
        frames += event["itemId"] in ids
        for method, path, body in (("get", "/api/v1/items/posts?limit=25&meta=none", None),
                                   ("get", f"/api/v1/items/posts/{ids[-1]}", None),
                                   ("post", "/api/v1/graphql", GRAPHQL)):
            statuses.append((await http.request(method, path, json=body, headers=headers)).status_code)
        feed = await http.get("/api/v1/cdc/events", params={"cursor": cursor, "limit": 500}, headers=headers)
        statuses.append(feed.status_code)
        cursor = feed.json()["meta"]["nextCursor"]
        written.update(e["id"] for e in feed.json()["data"] if e["type"].startswith("items."))
        if n == 0:
            fds_after_first_round = open_fds()
    assert ws_cm is not None
    await ws_cm.__aexit__(None, None, None)

    assert [s for s in statuses if s >= 300] == []
    assert frames == writes == ROUNDS
    feed = await calls.ok("get", "/cdc/events", full=True, params={"cursor": cursor, "limit": 500})
    written.update(e["id"] for e in feed["data"] if e["type"].startswith("items."))
    assert len(written) == ROUNDS

    def delivered() -> set[str]:
        return {e["id"] for r in http_receiver.received("/hook") for e in r.json()["events"]}

    for _ in range(500):  # a deadline for the dispatcher, not a speed bound
        if written <= delivered():
            break
        await asyncio.sleep(0.02)
    assert written - delivered() == set()
    assert open_fds() - fds_after_first_round <= FD_SLACK
