"""/cdc/subscriptions: create, list with lag, detail, patch (state table), delete, ack, replay,
dispatch, deliveries; bodies, limits, the guard, and site isolation."""

from __future__ import annotations

import datetime as dt

import pytest

from kernel.testing import Calls

SUBS = "/cdc/subscriptions"
SECRET = "a-webhook-secret-of-some-length"


async def posts(calls: Calls, *titles: str) -> list[str]:
    if (await calls.call("get", "/collections/posts")).status_code != 200:
        await calls.collection("posts", {"title": "string"})
    return [(await calls.create("posts", {"title": t}))["id"] for t in titles]


async def pull(calls: Calls, name: str = "puller", **extra) -> dict:
    return await calls.ok("post", SUBS, status=201, json={"name": name, "kind": "pull", **extra})


async def webhook(calls: Calls, url: str, name: str = "hook", **extra) -> dict:
    body = {"name": name, "kind": "webhook", "url": url, "secret": SECRET, **extra}
    return await calls.ok("post", SUBS, status=201, json=body)


async def test_create_list_and_detail(calls, http_receiver):
    made = await webhook(calls, http_receiver.url("/hook"), collections=["posts"], operations=["update", "create"])
    assert made["kind"] == "webhook" and made["status"] == "active" and made["hasSecret"] is True
    assert made["operations"] == ["create", "update"] and made["collections"] == ["posts"]
    assert "secret" not in made and SECRET not in repr(made)
    assert made["lag"] == {"events": 0, "oldestAgeSeconds": None}
    p = await pull(calls)
    assert p["kind"] == "pull" and "url" not in p and "hasSecret" not in p
    body = await calls.ok("get", SUBS, full=True)
    assert [s["name"] for s in body["data"]] == ["hook", "puller"] and body["meta"]["total"] == 2
    assert SECRET not in repr(body)
    assert (await calls.ok("get", f"{SUBS}/{p['id']}"))["id"] == p["id"]


async def test_lag_counts_the_events_the_filters_keep(calls):
    p = await pull(calls, operations=["update"])
    everything = await pull(calls, name="all")
    [post] = await posts(calls, "a")
    await calls.ok("patch", f"/items/posts/{post}", json={"title": "b"})
    await calls.ok("patch", f"/items/posts/{post}", json={"title": "c"})
    lag = (await calls.ok("get", f"{SUBS}/{p['id']}"))["lag"]
    assert lag["events"] == 2 and 0 <= lag["oldestAgeSeconds"] < 60
    # collections.create, fields.create, items.create and the two updates
    assert (await calls.ok("get", f"{SUBS}/{everything['id']}"))["lag"]["events"] == 5


@pytest.mark.parametrize("body, path", [
    ({"kind": "pull"}, "name"),
    ({"name": "", "kind": "pull"}, "name"),
    ({"name": "x" * 101, "kind": "pull"}, "name"),
    ({"name": "a\nb", "kind": "pull"}, "name"),
    ({"name": "n", "kind": "push"}, "kind"),
    ({"name": "n"}, "kind"),
    ({"name": "n", "kind": "webhook", "secret": SECRET}, "url"),
    ({"name": "n", "kind": "webhook", "url": "http://127.0.0.1:9/x"}, "secret"),
    ({"name": "n", "kind": "webhook", "url": "http://127.0.0.1:9/x", "secret": "short"}, "secret"),
    ({"name": "n", "kind": "webhook", "url": "http://127.0.0.1:9/x", "secret": 12345678901234567}, "secret"),
    ({"name": "n", "kind": "webhook", "url": "http://0.0.0.0/x", "secret": SECRET}, "url"),
    ({"name": "n", "kind": "webhook", "url": "http://[::]/x", "secret": SECRET}, "url"),
    ({"name": "n", "kind": "webhook", "url": "ftp://example.com/x", "secret": SECRET}, "url"),
    ({"name": "n", "kind": "webhook", "url": "http://u:p@example.com/x", "secret": SECRET}, "url"),
    ({"name": "n", "kind": "pull", "url": "http://example.com/"}, "url"),
    ({"name": "n", "kind": "pull", "secret": SECRET}, "secret"),
    ({"name": "n", "kind": "pull", "operations": ["upsert"]}, "operations"),
    ({"name": "n", "kind": "pull", "operations": "create"}, "operations"),
    ({"name": "n", "kind": "pull", "collections": ["bad name"]}, "collections"),
    ({"name": "n", "kind": "pull", "collections": [1]}, "collections"),
    ({"name": "n", "kind": "pull", "collections": ["a,b"]}, "collections"),
    ({"name": "n", "kind": "pull", "status": "paused"}, "status"),
    ({"name": "n", "kind": "pull", "extra": 1}, "extra"),
])
async def test_bad_bodies(shared_site, body, path):
    calls = shared_site.calls
    await calls.err("post", SUBS, 400, "VALIDATION_FAILED", [path], json=body)
    assert await calls.ok("get", SUBS) == []


async def test_bad_json_and_unknown_ids(calls):
    resp = await calls.call("post", SUBS, content=b"{nope", headers={"Content-Type": "application/json"})
    assert resp.status_code == 400
    await calls.err("post", SUBS, 400, "VALIDATION_FAILED", json=["a"])
    for method, suffix in (("get", ""), ("patch", ""), ("delete", ""), ("post", "/ack"), ("post", "/replay"),
                           ("post", "/dispatch"), ("get", "/deliveries")):
        kwargs = {"json": {}} if method in ("patch", "post") and suffix != "/dispatch" else {}
        # An id none can have (too long) is 404 before anything; no such subscription is 404,
        # except for an ack or a replay, which check their body (the cursor) first: {} is 400.
        for bad in ("missing", "x" * 300):
            body_first = suffix in ("/ack", "/replay") and bad == "missing"
            expected = (400, "VALIDATION_FAILED") if body_first else (404, "RECORD_NOT_FOUND")
            resp = await calls.call(method, f"{SUBS}/{bad}{suffix}", **kwargs)
            assert (resp.status_code, resp.json()["errors"][0]["code"]) == expected, (method, suffix, resp.text)


async def test_duplicate_names_and_the_cap(calls):
    await pull(calls, name="same")
    await calls.err("post", SUBS, 409, "CONFLICT", json={"name": "same", "kind": "pull"})
    for i in range(49):
        await pull(calls, name=f"p{i}")
    error = await calls.err("post", SUBS, 403, "PERMISSION_DENIED", json={"name": "one-more", "kind": "pull"})
    assert error["extensions"]["limit"] == 50
    other = (await calls.ok("get", SUBS))[1]
    await calls.err("patch", f"{SUBS}/{other['id']}", 409, "CONFLICT", json={"name": "same"})


async def test_webhooks_need_the_encryption_key(make_app, http_receiver):
    app = await make_app()  # no SVC_ENCRYPTION_KEY
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    resp = await app.client.post("/api/v1/cdc/subscriptions", headers=headers,
                                 json={"name": "h", "kind": "webhook", "url": http_receiver.url("/h"),
                                       "secret": SECRET})
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "ENCRYPTION_KEY_REQUIRED", resp.text
    resp = await app.client.post("/api/v1/cdc/subscriptions", headers=headers,
                                 json={"name": "p", "kind": "pull"})
    assert resp.status_code == 201  # a pull subscription stores no secret


async def test_state_table(calls, http_receiver):
    sub = await webhook(calls, http_receiver.url("/hook"))
    one = f"{SUBS}/{sub['id']}"
    assert (await calls.ok("patch", one, json={"status": "paused"}))["status"] == "paused"
    assert (await calls.ok("patch", one, json={"status": "paused"}))["status"] == "paused"  # no change
    await calls.err("patch", one, 409, "CONFLICT", json={"status": "dead"})
    await calls.err("patch", one, 409, "CONFLICT", json={"status": "stale"})
    await calls.err("patch", one, 400, "VALIDATION_FAILED", ["status"], json={"status": "gone"})
    await calls.err("patch", one, 400, "VALIDATION_FAILED", ["kind"], json={"kind": "pull"})
    assert (await calls.ok("patch", one, json={"status": "active"}))["status"] == "active"
    changed = await calls.ok("patch", one, json={"collections": ["posts"], "secret": "another-secret-value-1"})
    assert changed["collections"] == ["posts"] and changed["hasSecret"] and "secret" not in changed
    p = await pull(calls)
    await calls.err("patch", f"{SUBS}/{p['id']}", 400, "VALIDATION_FAILED", ["url"], json={"url": "http://a.b/"})


async def test_ack_moves_forward_only(calls):
    p = await pull(calls)
    one = f"{SUBS}/{p['id']}"
    await posts(calls, "a", "b")
    page = await calls.ok("get", "/cdc/events", full=True, params={"cursor": p["cursor"], "limit": 2})
    middle = page["meta"]["nextCursor"]
    acked = await calls.ok("post", f"{one}/ack", json={"cursor": middle})
    assert acked["cursor"] == middle and acked["lag"]["events"] == 2
    tail = (await calls.ok("get", "/cdc/events", full=True, params={"cursor": middle}))["meta"]["nextCursor"]
    assert (await calls.ok("post", f"{one}/ack", json={"cursor": tail}))["lag"]["events"] == 0
    await calls.ok("post", f"{one}/ack", json={"cursor": tail})  # the same position again is fine
    error = await calls.err("post", f"{one}/ack", 409, "ACK_REGRESSION", json={"cursor": middle})
    assert error["extensions"]["cursor"] == tail
    await calls.err("post", f"{one}/ack", 400, "VALIDATION_FAILED", ["cursor"], json={"cursor": "nope"})
    await calls.err("post", f"{one}/ack", 400, "VALIDATION_FAILED", ["cursor"], json={"cursor": 5})
    await calls.err("post", f"{one}/ack", 400, "VALIDATION_FAILED", ["cursor"], json={})
    await calls.err("post", f"{one}/ack", 400, "VALIDATION_FAILED", ["cursor"], json={"cursor": "999999999-1"})
    await calls.err("post", f"{one}/ack", 400, "VALIDATION_FAILED", ["x"], json={"cursor": tail, "x": 1})


async def test_ack_is_for_pull_subscriptions(calls, http_receiver):
    sub = await webhook(calls, http_receiver.url("/hook"))
    await calls.err("post", f"{SUBS}/{sub['id']}/ack", 409, "CONFLICT", json={"cursor": sub["cursor"]})


async def test_replay_rewinds_and_is_audited(calls, svc_app, site):
    await posts(calls, "a")
    p = await pull(calls)
    one = f"{SUBS}/{p['id']}"
    await calls.err("post", f"{one}/replay", 400, "VALIDATION_FAILED", json={})
    await calls.err("post", f"{one}/replay", 400, "VALIDATION_FAILED",
                    json={"cursor": p["cursor"], "occurred_after": "2026-01-01T00:00:00Z"})
    await calls.err("post", f"{one}/replay", 400, "VALIDATION_FAILED", ["occurred_after"],
                    json={"occurred_after": "yesterday"})
    await calls.err("post", f"{one}/replay", 400, "VALIDATION_FAILED", ["occurred_after"],
                    json={"occurred_after": "2026-01-01T00:00:00"})  # no offset: ambiguous
    back = await calls.ok("post", f"{one}/replay", json={"occurred_after": "2000-01-01T00:00:00Z"})
    assert back["status"] == "active" and back["lag"]["events"] == 3  # everything of the site
    forward = await calls.ok("post", f"{one}/replay", json={"cursor": p["cursor"]})
    assert forward["lag"]["events"] == 0
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    assert (await calls.ok("post", f"{one}/replay", json={"occurred_after": future}))["lag"]["events"] == 0
    audit = await calls.ok("get", "/audit", params={"limit": 50})
    actions = [a["action"] for a in audit]
    assert actions.count("cdc.subscription.replay") == 3 and "cdc.subscription.create" in actions
    # -- more43: each replay is followed in GET /work (the refused ones above started none)
    replays = [w for w in await calls.ok("get", "/work") if w["kind"] == "replay"]
    assert [(w["label"], w["status"], w["target"]) for w in replays] == [
        (f"Replay of {p['name']}", "done", {"type": "cdc_subscription", "id": p["id"]})] * 3
    await calls.ok("delete", one, status=204)
    assert "cdc.subscription.delete" in [a["action"] for a in await calls.ok("get", "/audit")]
    await calls.err("get", one, 404, "RECORD_NOT_FOUND")


async def test_pruned_positions_are_stale_until_replayed(calls, svc_app, site, run_due_jobs):
    await posts(calls, "a")
    p = await pull(calls)
    old = p["cursor"]
    await posts(calls, "b")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=svc_app.kernel.settings.cdc_retention_days + 1)
    assert await svc_app.kernel.events.prune(now=later) > 0
    await run_due_jobs(svc_app, now=later)
    stale = await calls.ok("get", f"{SUBS}/{p['id']}")
    assert stale["status"] == "stale" and "pruned" in stale["statusReason"]
    await calls.err("patch", f"{SUBS}/{p['id']}", 409, "CONFLICT", json={"status": "active"})
    error = await calls.err("post", f"{SUBS}/{p['id']}/replay", 410, "CURSOR_EXPIRED", json={"cursor": old})
    earliest = error["extensions"]["earliestCursor"]
    revived = await calls.ok("post", f"{SUBS}/{p['id']}/replay", json={"cursor": earliest})
    assert revived["status"] == "active" and revived["statusReason"] is None


async def test_dispatch_and_deliveries(calls, http_receiver):
    http_receiver.serve("/hook", {"ok": True})
    sub = await webhook(calls, http_receiver.url("/hook"))
    one = f"{SUBS}/{sub['id']}"
    assert await calls.ok("post", f"{one}/dispatch", status=202) == {"id": sub["id"], "dispatched": True}
    await calls.err("post", f"{one}/dispatch", 400, "VALIDATION_FAILED", json={"now": True})
    p = await pull(calls)
    await calls.err("post", f"{SUBS}/{p['id']}/dispatch", 409, "CONFLICT")
    await calls.ok("patch", one, json={"status": "paused"})
    await calls.err("post", f"{one}/dispatch", 409, "CONFLICT")
    body = await calls.ok("get", f"{one}/deliveries", full=True)
    assert body["data"] == [] and body["meta"]["total"] == 0
    await calls.err("get", f"{one}/deliveries", 400, "VALIDATION_FAILED", params={"limit": "0"})
    await calls.err("get", f"{one}/deliveries", 400, "VALIDATION_FAILED", params={"page": "x"})


async def test_site_b_sees_and_touches_nothing_of_site_a(calls, calls_b, http_receiver):
    sub = await webhook(calls, http_receiver.url("/hook"))
    p = await pull(calls)
    assert await calls_b.ok("get", SUBS) == []
    for target in (sub, p):
        one = f"{SUBS}/{target['id']}"
        await calls_b.err("get", one, 404, "RECORD_NOT_FOUND")
        await calls_b.err("patch", one, 404, "RECORD_NOT_FOUND", json={"status": "paused"})
        await calls_b.err("delete", one, 404, "RECORD_NOT_FOUND")
        await calls_b.err("post", f"{one}/ack", 404, "RECORD_NOT_FOUND", json={"cursor": "0-0"})
        await calls_b.err("post", f"{one}/replay", 404, "RECORD_NOT_FOUND", json={"cursor": "0-0"})
        await calls_b.err("post", f"{one}/dispatch", 404, "RECORD_NOT_FOUND")
        await calls_b.err("get", f"{one}/deliveries", 404, "RECORD_NOT_FOUND")
    # The same name is free in site B; A's are untouched.
    await calls_b.ok("post", SUBS, status=201, json={"name": "hook", "kind": "pull"})
    assert {s["name"]: s["status"] for s in await calls.ok("get", SUBS)} == {"hook": "active", "puller": "active"}


async def test_guard(svc_app, site, calls, make_member):
    p = await pull(calls)
    editor = (await calls.ok("post", "/roles", status=201, json={"name": "Editor"}))["id"]
    for role in (editor, "subscriber"):  # no cdc:subscribe; the subscriber is of the frontend realm
        member = await make_member(site, role=role)
        headers = {"Authorization": f"Bearer {member.token}", "X-Svc-Site": site}
        for method, path, body in (("get", SUBS, None), ("post", SUBS, {"name": "x", "kind": "pull"}),
                                   ("post", f"{SUBS}/{p['id']}/ack", {"cursor": p["cursor"]}),
                                   ("post", f"{SUBS}/{p['id']}/replay", {"cursor": p["cursor"]})):
            resp = await svc_app.client.request(method, f"/api/v1{path}", headers=headers, json=body)
            assert resp.status_code == 403, (role, path, resp.text)
            assert resp.json()["errors"][0]["code"] == "PERMISSION_DENIED"


async def test_a_consumer_with_the_capability_acks_but_does_not_administer(svc_app, site, calls, make_member):
    p = await pull(calls)
    await posts(calls, "a")
    role = await calls.ok("post", "/roles", status=201, json={"name": "Consumer"})
    await calls.grant([{"collection": "*", "action": "cdc:subscribe"}], {"roleId": role["id"]})
    consumer = Calls(svc_app.client, (await make_member(site, role["id"])).headers)
    page = await consumer.ok("get", "/cdc/events", full=True, params={"cursor": p["cursor"]})
    acked = await consumer.ok("post", f"{SUBS}/{p['id']}/ack", json={"cursor": page["meta"]["nextCursor"]})
    assert acked["lag"]["events"] == 0
    await consumer.err("get", SUBS, 403, "PERMISSION_DENIED")
    await consumer.err("post", f"{SUBS}/{p['id']}/replay", 403, "PERMISSION_DENIED", json={"cursor": p["cursor"]})


async def test_upkeep_costs_the_same_at_5_and_50_idle_sites(svc_app, calls, calls_b, site, site_b, http_receiver):
    # Issue 27 ("scale"): one query finds the subscriptions retention overtook, across sites; a
    # site whose subscriptions are in range costs nothing, and deliveries go in bounded batches.
    # The idle sites each have an active pull subscription. B lost events to retention before
    # its pull subscription and webhook were made (in range). Each round: in A a pull
    # subscription and a webhook that retention overtakes, and an old delivery record; in B a
    # recent delivery record.
    from sqlalchemy import insert, select, update

    from kernel.events import START
    from kernel.events.tables import events
    from kernel.testing import add_idle_sites, counted_statements
    from plugins.cdc import upkeep
    from plugins.cdc.subscriptions import checkpoint_name
    from plugins.cdc.tables import deliveries

    kernel = svc_app.kernel
    url = http_receiver.serve("/hook", {"ok": True})
    days = kernel.settings.cdc_retention_days

    async def age(site_id: str) -> None:
        async with kernel.db.begin() as conn:
            await conn.execute(update(events).where(events.c.site_id == site_id).values(
                occurred_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=days + 1)))
        assert await kernel.events.prune() > 0

    await posts(calls_b, "b")
    await age(site_b)
    p_b = await pull(calls_b, name="pb")
    hook_b = await webhook(calls_b, url, name="hb")
    counts = []
    for idle in (5, 45):
        for idle_site in await add_idle_sites(kernel, idle):
            await pull(Calls(svc_app.client, {**calls.headers, "X-Svc-Site": idle_site}), name="idle")
        await posts(calls, f"a{idle}")
        p_a = await pull(calls, name=f"pa{idle}")
        hook_a = await webhook(calls, url, name=f"ha{idle}")
        await posts(calls, f"a{idle}-2")
        await posts(calls_b, f"b{idle}")
        await age(site)
        now = dt.datetime.now(dt.UTC)
        async with kernel.db.begin() as conn:  # A's webhook never delivered (the dispatcher may have)
            await kernel.events.set_checkpoint(conn, site, checkpoint_name(hook_a["id"]), START)
            for site_id, hook, old in ((site, hook_a, days + 1), (site_b, hook_b, 0)):
                await conn.execute(insert(deliveries).values(
                    site_id=site_id, subscription_id=hook["id"], delivery_id=f"d-{idle}-{site_id}", attempt=1,
                    status_code=200, duration_ms=1, event_count=1, attempted_at=now - dt.timedelta(days=old)))
        with counted_statements(kernel) as seen:
            await upkeep.run(kernel)
        counts.append(len(seen))
        assert [(await calls.ok("get", f"{SUBS}/{s['id']}"))["status"] for s in (p_a, hook_a)] == ["stale"] * 2
        assert [(await calls_b.ok("get", f"{SUBS}/{s['id']}"))["status"] for s in (p_b, hook_b)] == ["active"] * 2
        async with kernel.db.connect() as conn:
            left = (await conn.execute(select(deliveries.c.site_id).where(
                deliveries.c.delivery_id.like(f"d-{idle}-%")))).scalars().all()
        assert left == [site_b]
    assert counts[0] == counts[1]
