"""Walks over every route: no admin route answers a non-admin, no answer carries a password hash."""

from __future__ import annotations

import re

from kernel.base.ids import uuid7
from kernel.testing import shared as testing_shared

# Every test reads and writes in a site of its own: they share the module's app, each in a new site
# of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

PARAM = re.compile(r"{([A-Za-z_][A-Za-z0-9_]*)}")


def admin_operations(kernel):
    """Every (method, concrete path) whose route needs admin or the instance admin."""
    for route in kernel.routes:
        for method in route.methods():
            if route.auth_for(method) in ("admin", "instance-admin"):
                yield method, PARAM.sub(lambda m: uuid7(), route.template), route.auth_for(method)


async def test_a_non_admin_reaches_no_admin_route(svc_app, site, make_member, login_as):
    subscriber = await make_member(site)
    token = (await login_as(subscriber.email, site=site))["token"]
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
    walked = 0
    for method, path, _level in admin_operations(svc_app.kernel):
        body = {} if method in ("POST", "PUT", "PATCH") else None
        resp = await svc_app.client.request(method, path, json=body, headers=headers)
        assert resp.status_code == 403, (method, path, resp.status_code, resp.text)
        assert resp.json()["errors"][0]["code"] == "PERMISSION_DENIED", (method, path)
        walked += 1
    # Every admin area of this issue is in the walk (so it cannot pass by walking nothing).
    paths = {p for _, p, _ in admin_operations(svc_app.kernel)}
    for prefix in ("/api/v1/roles", "/api/v1/policies", "/api/v1/teams", "/api/v1/users", "/api/v1/api-keys",
                   "/api/v1/admin/auth/issuers", "/api/v1/audit", "/api/v1/sites"):
        assert any(p.startswith(prefix) for p in paths), prefix
    assert walked >= 30


async def test_anonymous_reaches_no_admin_route(svc_app, site):
    for method, path, _ in admin_operations(svc_app.kernel):
        body = {} if method in ("POST", "PUT", "PATCH") else None
        resp = await svc_app.client.request(method, path, json=body, headers={"X-Svc-Site": site})
        assert resp.status_code == 401, (method, path, resp.status_code)


async def test_no_answer_carries_a_password_hash(svc_app, site, site_headers, make_member, login_as):
    member = await make_member(site)
    await login_as(member.email, site=site)
    seen = 0
    for route in svc_app.kernel.routes:
        if "GET" not in route.methods():
            continue
        path = route.template.replace("{user_id}", member.id)
        if PARAM.search(path):
            continue
        resp = await svc_app.client.get(path, headers=site_headers)
        assert "$argon2" not in resp.text, path
        assert "password_hash" not in resp.text and "passwordHash" not in resp.text, path
        seen += resp.status_code == 200
    assert seen >= 10
