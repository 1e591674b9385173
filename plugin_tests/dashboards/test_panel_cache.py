"""Panel answers are cached per (site, panel, the caller's access) and dropped by writes."""

from __future__ import annotations

from dashboards_helpers import dashboard, panel, reader_rules, run, seed_orders

from kernel.testing import Calls, new_member
from kernel.testing import shared as testing_shared

# Every test but the cache-off one's (a setting of its own) writes and reads in a site of its own: they
# share the module's app, each in a new site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

COUNT = {"collection": "orders", "aggregate": "count"}


async def _member(svc_app, site, calls, rules):
    made = await new_member(svc_app, site, "subscriber")
    await calls.grant(rules, {"userId": made.id})
    svc_app.kernel.access.invalidate(site)
    return Calls(svc_app.client, made.headers)


async def test_a_write_is_seen_by_the_next_run(calls):
    await seed_orders(calls)
    d = await dashboard(calls)
    p = await panel(calls, d, COUNT)
    first = await run(calls, d, p)
    again = await run(calls, d, p)
    assert (first["cache"], again["cache"]) == ("miss", "hit")
    assert again["data"] == first["data"] == [{"value": 6}] and again["meta"] == first["meta"]
    made = await calls.create("orders", {"category": "z", "amount": 3})
    after_create = await run(calls, d, p)
    assert (after_create["cache"], after_create["data"]) == ("miss", [{"value": 7}])
    await calls.ok("patch", f"/items/orders/{made['id']}", json={"amount": 4})
    assert (await run(calls, d, p))["cache"] == "miss"
    await calls.ok("delete", f"/items/orders/{made['id']}", status=204)
    assert (await run(calls, d, p))["data"] == [{"value": 6}]
    # Writes elsewhere keep the panel's answer; a change of the panel's query does not reuse it.
    await calls.create("buyers", {"id": "u9", "name": "Cy"})
    assert (await run(calls, d, p))["cache"] == "hit"
    await calls.ok("patch", f"/dashboards/{d}/panels/{p}", json={"query": {**COUNT, "filter": {"category": {
        "_eq": "a"}}}})
    changed = await run(calls, d, p)
    assert (changed["cache"], changed["data"]) == ("miss", [{"value": 3}])


async def test_a_relational_filter_sees_writes_to_the_related_collection(calls):
    await seed_orders(calls)
    d = await dashboard(calls)
    p = await panel(calls, d, {**COUNT, "filter": {"buyer": {"name": {"_eq": "Ann"}}}})
    assert (await run(calls, d, p))["data"] == [{"value": 3}]
    await calls.ok("patch", "/items/buyers/u2", json={"name": "Ann"})
    assert (await run(calls, d, p))["data"] == [{"value": 6}]


async def test_fewer_permissions_never_read_a_richer_answer(svc_app, site, calls):
    await seed_orders(calls)
    d = await dashboard(calls)
    p = await panel(calls, d, {"collection": "orders", "aggregate": "sum", "field": "amount"})
    assert (await run(calls, d, p))["data"] == [{"value": 143}]
    narrow = await _member(svc_app, site, calls, reader_rules(conditions={"category": {"_eq": "b"}}))
    wide = await _member(svc_app, site, calls, reader_rules())
    twin = await _member(svc_app, site, calls, reader_rules())
    seen = await run(narrow, d, p)
    assert (seen["cache"], seen["data"]) == ("miss", [{"value": 120}])
    assert (await run(wide, d, p))["data"] == [{"value": 143}]
    shared = await run(twin, d, p)
    assert (shared["cache"], shared["data"]) == ("hit", [{"value": 143}])
    assert (await run(narrow, d, p))["data"] == [{"value": 120}]
    # Rules on $CURRENT_USER key the answer on the caller: two such callers never share one.
    mine = [*reader_rules(conditions={"userCreated": {"_eq": "$CURRENT_USER"}})]
    own_a, own_b = await _member(svc_app, site, calls, mine), await _member(svc_app, site, calls, mine)
    assert (await run(own_a, d, p))["data"] == [{"value": None}]
    assert (await run(own_b, d, p))["cache"] == "miss"


async def test_a_permission_change_is_seen_at_once(svc_app, site, calls):
    await seed_orders(calls)
    d = await dashboard(calls)
    p = await panel(calls, d, COUNT)
    made = await new_member(svc_app, site, "subscriber")
    await calls.grant(reader_rules(conditions={"category": {"_eq": "a"}}), {"userId": made.id})
    member = Calls(svc_app.client, made.headers)
    assert (await run(member, d, p))["data"] == [{"value": 3}]
    widening = await calls.grant([{"collection": "orders", "action": "read", "fields": ["amount"]}], {"userId": made.id})
    widened = await run(member, d, p)
    assert (widened["cache"], widened["data"]) == ("miss", [{"value": 6}])
    await calls.ok("delete", f"/policies/{widening}", status=204)
    assert (await run(member, d, p))["data"] == [{"value": 3}]


async def test_the_cache_can_be_turned_off(make_app):
    app = await make_app(env={"SVC_DASHBOARDS_CACHE_TTL": "0"})
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    calls = Calls(app.client, {**headers, "X-Svc-Site": site})
    await seed_orders(calls)
    d = await dashboard(calls)
    p = await panel(calls, d, COUNT)
    assert [(await run(calls, d, p))["cache"] for _ in range(2)] == ["miss", "miss"]
