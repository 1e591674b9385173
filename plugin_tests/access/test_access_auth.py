"""Who may call the access routes, and that no site can see or touch another's data.

Every route: anonymous -> 401, a member without admin access -> 403 (admin routes), a token
of site A sent to site B -> 401 (tokens are site-bound), no site -> 400. A site admin who is
not the instance admin manages site A fully and finds nothing of site B by id (404).

The tests share the module's app, each in new sites (kernel/testing/shared.py).
"""

from __future__ import annotations

import pytest

from kernel.testing import API, Calls
from kernel.testing import shared as testing_shared

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

MISSING = "0190a0a0-0000-7000-8000-000000000000"

# (method, path template, body) for every access route; {role} {policy} {team} {rule} are ids.
ADMIN_ROUTES = [
    ("get", "/roles", None),
    ("post", "/roles", {"name": "New"}),
    ("patch", "/roles", {"keys": ["{role}"], "data": {"name": "Renamed"}}),
    ("delete", "/roles", ["{role}"]),
    ("get", "/roles/{role}", None),
    ("patch", "/roles/{role}", {"name": "Renamed"}),
    ("delete", "/roles/{role}", None),
    ("get", "/policies", None),
    ("post", "/policies", {"name": "New"}),
    ("patch", "/policies", {"keys": ["{policy}"], "data": {"name": "Renamed"}}),
    ("delete", "/policies", {"keys": ["{policy}"]}),
    ("get", "/policies/{policy}", None),
    ("patch", "/policies/{policy}", {"name": "Renamed"}),
    ("delete", "/policies/{policy}", None),
    ("get", "/policies/{policy}/permissions", None),
    ("post", "/policies/{policy}/permissions", {"collection": "a", "action": "read"}),
    ("get", "/policies/{policy}/permissions/{rule}", None),
    ("delete", "/policies/{policy}/permissions/{rule}", None),
    ("post", "/policies/{policy}/attach", {"roleId": "{role}"}),
    ("post", "/policies/{policy}/detach", {"roleId": "{role}"}),
    ("get", "/teams", None),
    ("post", "/teams", {"name": "New"}),
    ("patch", "/teams", {"keys": ["{team}"], "data": {"name": "Renamed"}}),
    ("delete", "/teams", ["{team}"]),
    ("get", "/teams/{team}", None),
    ("patch", "/teams/{team}", {"name": "Renamed"}),
    ("delete", "/teams/{team}", None),
    ("get", "/users/subscriber-access", None),
    ("post", "/users/subscriber-access", {"collection": "articles"}),
    ("delete", "/users/subscriber-access/articles", None),
]
BEARER_ROUTES = [
    ("get", "/permissions/me", None),
    ("post", "/permissions/check", {"collection": "articles", "action": "read"}),
]


async def make_objects(calls: Calls) -> dict[str, str]:
    """One role, policy (with a rule, attached to the role), team and grant in a site."""
    role = await calls.ok("post", "/roles", 201, json={"name": "Obj role"})
    policy = await calls.ok("post", "/policies", 201, json={"name": "Obj policy"})
    rule = await calls.ok("post", f"/policies/{policy['id']}/permissions", 201,
                          json={"collection": "articles", "action": "read"})
    await calls.ok("post", f"/policies/{policy['id']}/attach", 201, json={"roleId": role["id"]})
    team = await calls.ok("post", "/teams", 201, json={"name": "Obj team"})
    await calls.ok("post", "/users/subscriber-access", 201, json={"collection": "articles"})
    return {"role": role["id"], "policy": policy["id"], "team": team["id"], "rule": rule["id"]}


def fill(value, ids: dict[str, str]):
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, list):
        return [fill(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    return value


def kwargs(body, ids):
    return {} if body is None else {"json": fill(body, ids)}


async def test_anonymous_gets_401_everywhere(svc_app, site):
    ids = {"role": MISSING, "policy": MISSING, "team": MISSING, "rule": MISSING}
    anonymous = Calls(svc_app.client, {"X-Svc-Site": site})
    for method, path, body in ADMIN_ROUTES + BEARER_ROUTES:
        await anonymous.err(method, fill(path, ids), 401, "UNAUTHENTICATED", **kwargs(body, ids))
    bad_token = Calls(svc_app.client, {"X-Svc-Site": site, "Authorization": "Bearer not-a-token"})
    for method, path, body in ADMIN_ROUTES + BEARER_ROUTES:
        await bad_token.err(method, fill(path, ids), 401, **kwargs(body, ids))


@pytest.mark.parametrize("role", ["subscriber", "public", "custom"])
async def test_non_admins_get_403_on_admin_routes(svc_app, site, calls, make_member, role):
    ids = await make_objects(calls)
    member = await make_member(site, ids["role"] if role == "custom" else role)
    as_member = Calls(svc_app.client, member.headers)
    for method, path, body in ADMIN_ROUTES:
        await as_member.err(method, fill(path, ids), 403, "PERMISSION_DENIED", **kwargs(body, ids))
    for method, path, body in BEARER_ROUTES:
        await as_member.ok(method, path, **kwargs(body, ids))
    # Nothing changed.
    assert (await calls.ok("get", f"/roles/{ids['role']}"))["name"] == "Obj role"


async def test_routes_need_a_site(svc_app, admin_headers):
    no_site = Calls(svc_app.client, admin_headers)
    for method, path, body in ADMIN_ROUTES + BEARER_ROUTES:
        ids = {"role": MISSING, "policy": MISSING, "team": MISSING, "rule": MISSING}
        error = await no_site.err(method, fill(path, ids), 400, "VALIDATION_FAILED", **kwargs(body, ids))
        assert error["path"] == ["headers", "X-Svc-Site"]
    unknown = Calls(svc_app.client, {**admin_headers, "X-Svc-Site": "no-such-site"})
    await unknown.err("get", "/roles", 404, "SITE_NOT_FOUND")


async def test_site_admin_token_is_bound_to_its_site(svc_app, site, site_b, calls_b, make_member):
    ids_b = await make_objects(calls_b)
    admin_a = await make_member(site, "admin")
    with_b = Calls(svc_app.client, {**admin_a.headers, "X-Svc-Site": site_b})
    for method, path, body in ADMIN_ROUTES + BEARER_ROUTES:
        await with_b.err(method, fill(path, ids_b), 401, "UNAUTHENTICATED", **kwargs(body, ids_b))


async def test_site_admin_cannot_see_or_touch_another_site(svc_app, site, site_b, calls_b, make_member):
    ids_b = await make_objects(calls_b)
    before = {p: await calls_b.ok("get", p) for p in ("/roles", "/policies", "/teams", "/users/subscriber-access")}
    admin_a = await make_member(site, "admin")
    as_a = Calls(svc_app.client, admin_a.headers)
    ids_a = await make_objects(as_a)  # a site admin manages its own site fully

    # Lists show only site A.
    for path in ("/roles", "/policies", "/teams"):
        assert not {r["id"] for r in await as_a.ok("get", path)} & set(ids_b.values())
    # Every id of site B is unknown in site A.
    for method, path, body in ADMIN_ROUTES:
        if not any(f"{{{k}}}" in path + repr(body) for k in ids_b):
            continue
        filled = fill(path, ids_b)
        resp = await as_a.call(method, filled, **kwargs(body, ids_b))
        assert resp.status_code == 404, (method, filled, resp.status_code, resp.text)
    # Site B's ids as references in site A's bodies are refused too.
    await as_a.err("post", "/roles", 400, "VALIDATION_FAILED", ["parentId"],
                    json={"name": "X", "parentId": ids_b["role"]})
    await as_a.err("post", f"/policies/{ids_a['policy']}/attach", 400, "VALIDATION_FAILED", ["teamId"],
                    json={"teamId": ids_b["team"]})
    await as_a.err("post", f"/policies/{ids_a['policy']}/attach", 400, "VALIDATION_FAILED", ["roleId"],
                    json={"roleId": ids_b["role"]})
    # Site B is exactly as it was.
    after = {p: await calls_b.ok("get", p) for p in before}
    assert after == before


async def test_instance_admin_sees_each_site_separately(calls, calls_b):
    ids_a = await make_objects(calls)
    ids_b = await make_objects(calls_b)
    for kind, path in (("role", "/roles"), ("policy", "/policies"), ("team", "/teams")):
        await calls.err("get", f"{path}/{ids_b[kind]}", 404)
        await calls_b.err("get", f"{path}/{ids_a[kind]}", 404)
    await calls.err("get", f"/policies/{ids_a['policy']}/permissions/{ids_b['rule']}", 404)
    await calls.ok("delete", "/users/subscriber-access/articles", 204)
    assert await calls_b.ok("get", "/users/subscriber-access") == [{"collection": "articles"}]


async def test_openapi_documents_every_route(svc_app):
    doc = (await svc_app.client.get(f"{API}/openapi.json")).json()
    for method, path, _ in ADMIN_ROUTES + BEARER_ROUTES:
        template = path.replace("{role}", "{role_id}").replace("{policy}", "{policy_id}").replace(
            "{team}", "{team_id}").replace("{rule}", "{permission_id}").replace("/articles", "/{collection}")
        op = doc["paths"][API + template][method]
        assert op["x-svc-auth"] == ("bearer" if path.startswith("/permissions") else "admin")
        assert op["tags"] == ["access"]
