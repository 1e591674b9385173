"""Item routes count against the items_read / items_write buckets and say so in headers."""

from __future__ import annotations

from kernel.testing import Calls

HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


async def test_headers_on_every_items_route(calls: Calls):
    await calls.collection("rl", {"a": "string"})
    await calls.create("rl", {"id": "x"})
    reads = [("get", "/items/rl"), ("get", "/items/rl/x"), ("get", "/items/rl/x/dependents")]
    writes = [("post", "/items/rl", {"a": "b"}), ("patch", "/items/rl/x", {"a": "c"}), ("put", "/items/rl/x", {}),
              ("post", "/items/rl/x/resolve-dependents", {"action": "set_null", "relation": "nope"}),
              ("delete", "/items/rl/x", None)]
    for method, path in reads:
        resp = await calls.call(method, path)
        assert all(h in resp.headers for h in HEADERS), (method, path)
        assert resp.headers["x-ratelimit-limit"] == "6000"
    for method, path, body in writes:
        resp = await calls.call(method, path, json=body) if body is not None else await calls.call(method, path)
        assert all(h in resp.headers for h in HEADERS), (method, path)
        assert resp.headers["x-ratelimit-limit"] == "600"


async def test_write_limit_is_enforced(make_app):
    app = await make_app(rate_limit_items_write=2)
    token = await app.login()
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"}
    calls = Calls(app.client, headers)
    await calls.collection("rl", {"a": "string"})
    await calls.create("rl", {"a": "1"})
    await calls.create("rl", {"a": "2"})
    err = await calls.err("post", "/items/rl", 429, "RATE_LIMITED", json={"a": "3"})
    assert err["extensions"]["limit"] == 2
    assert (await calls.list("rl"))["meta"]["total"] == 2  # reads have their own bucket
