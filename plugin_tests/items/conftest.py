"""Fixtures of the items tests: admin calls in two sites, members with policies of the test's
choosing, anonymous calls, and an event recorder."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import pytest_asyncio
from items_helpers import API, PASSWORD, Calls, Recorder

from plugins.access import api as access_api
from plugins.accounts.service import create_user


@pytest_asyncio.fixture
async def site_b(svc_app: Any, admin_headers: dict[str, str]) -> str:
    """A second site, for cross-tenant tests."""
    site_id = f"b-{uuid.uuid4().hex[:10]}"
    resp = await svc_app.client.post(f"{API}/sites", json={"id": site_id, "name": "Site B"}, headers=admin_headers)
    assert resp.status_code == 201, resp.text
    return site_id


@pytest.fixture
def calls(svc_app: Any, site_headers: dict[str, str]) -> Calls:
    """Calls as the instance admin in ``site``."""
    return Calls(svc_app.client, site_headers)


@pytest.fixture
def calls_b(svc_app: Any, site_b: str, admin_headers: dict[str, str]) -> Calls:
    """Calls as the instance admin in ``site_b``."""
    return Calls(svc_app.client, {**admin_headers, "X-Svc-Site": site_b})


@pytest.fixture
def anon_calls(svc_app: Any, site: str) -> Calls:
    """Calls with no credentials in ``site`` (the public role)."""
    return Calls(svc_app.client, {"X-Svc-Site": site})


@pytest.fixture
def member(svc_app: Any, site: str, calls: Calls) -> Any:
    """``await member(rules)``: a new member of ``site`` whose own policy holds ``rules``
    (``[{collection, action, fields?, conditions?}]``); returns ``(Calls, user_id)``."""

    async def make(rules: list[dict[str, Any]]) -> tuple[Calls, str]:
        email = f"m-{uuid.uuid4().hex[:10]}@example.com"
        async with svc_app.kernel.db.begin() as conn:
            user_id = await create_user(svc_app.kernel, conn, email=email, password=PASSWORD)
            role = await access_api.role_by_system_key(conn, site, "subscriber")
            await access_api.set_membership(conn, site, user_id, role["id"])
        await grant(calls, rules, {"userId": user_id})
        svc_app.kernel.access.invalidate(site)
        token = await svc_app.login(email, PASSWORD, site=site)
        return Calls(svc_app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site}), user_id

    return make


async def grant(calls: Calls, rules: list[dict[str, Any]], attach: dict[str, str]) -> str:
    """A policy with ``rules`` attached to ``attach`` (``{userId}`` or ``{roleId}``)."""
    policy = await calls.ok("post", "/policies", status=201, json={"name": f"p-{uuid.uuid4().hex[:8]}"})
    for rule in rules:
        await calls.ok("post", f"/policies/{policy['id']}/permissions", status=201, json=rule)
    await calls.ok("post", f"/policies/{policy['id']}/attach", status=201, json=attach)
    return policy["id"]


@pytest.fixture
def public_grant(svc_app: Any, site: str, calls: Calls) -> Any:
    """``await public_grant(rules)``: give the site's public role these rules."""

    async def give(rules: list[dict[str, Any]]) -> None:
        roles = await calls.ok("get", "/roles")
        public = next(r for r in roles if r.get("systemKey") == "public")
        await grant(calls, rules, {"roleId": public["id"]})
        svc_app.kernel.access.invalidate(site)

    return give


@pytest.fixture
def recorder(svc_app: Any) -> Any:
    """Every item action event of the app, recorded for the test."""
    rec = Recorder()
    off = svc_app.kernel.bus.on_action("*items.*", rec)
    yield rec
    off()
