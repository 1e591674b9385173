"""Fixtures of the schema tests: admin calls in two sites, a subscriber member, an anonymous
caller, and an event recorder on the bus."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import pytest_asyncio
from schema_helpers import API, PASSWORD, Calls, Recorder

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


@pytest_asyncio.fixture
async def member_calls(svc_app: Any, site: str) -> Calls:
    """Calls as a member of ``site`` with the built-in subscriber role (no admin access)."""
    email = f"sub-{uuid.uuid4().hex[:10]}@example.com"
    async with svc_app.kernel.db.begin() as conn:
        user_id = await create_user(svc_app.kernel, conn, email=email, password=PASSWORD)
        role = await access_api.role_by_system_key(conn, site, "subscriber")
        await access_api.set_membership(conn, site, user_id, role["id"])
    svc_app.kernel.access.invalidate(site)
    token = await svc_app.login(email, PASSWORD, site=site)
    return Calls(svc_app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})


@pytest.fixture
def anon_calls(svc_app: Any, site: str) -> Calls:
    """Calls with no credentials in ``site``."""
    return Calls(svc_app.client, {"X-Svc-Site": site})


@pytest.fixture
def recorder(svc_app: Any) -> Any:
    """Every action event of the app, recorded for the test."""
    rec = Recorder()
    off = svc_app.kernel.bus.on_action("*", rec)
    yield rec
    off()
