"""Fixtures of the access tests: members of a site with a chosen role, a second site, and
small helpers for the HTTP calls every test makes."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import pytest_asyncio
from access_helpers import API, PASSWORD, Calls, Member, role_id_of

from plugins.access import api
from plugins.accounts.service import create_user


@pytest_asyncio.fixture
async def make_member(svc_app: Any) -> Any:
    """``await make_member(site, role="admin")``: a new user, member of ``site`` with ``role``
    (built-in key or role id), logged in to that site. ``role=None``: no membership at all."""

    async def make(site: str, role: str | None = "admin") -> Member:
        email = f"u-{uuid.uuid4().hex[:12]}@example.com"
        role_id = await role_id_of(svc_app, site, role) if role else None
        async with svc_app.kernel.db.begin() as conn:
            user_id = await create_user(svc_app.kernel, conn, email=email, password=PASSWORD)
            if role_id:
                await api.set_membership(conn, site, user_id, role_id)
        # Membership changes made behind the API's back must drop cached decisions too.
        svc_app.kernel.access.invalidate(site)
        token = await svc_app.login(email, PASSWORD, site=site)
        return Member(user_id, email, site, token)

    return make


@pytest_asyncio.fixture
async def site_b(svc_app: Any, admin_headers: dict[str, str]) -> str:
    """A second site, for cross-tenant tests."""
    site_id = f"b-{uuid.uuid4().hex[:10]}"
    resp = await svc_app.client.post(f"{API}/sites", json={"id": site_id, "name": "Site B"}, headers=admin_headers)
    assert resp.status_code == 201, resp.text
    return site_id


@pytest.fixture
def site_b_headers(site_b: str, admin_headers: dict[str, str]) -> dict[str, str]:
    return {**admin_headers, "X-Svc-Site": site_b}


@pytest.fixture
def calls(svc_app: Any, site_headers: dict[str, str]) -> Calls:
    """Calls as the instance admin in ``site``."""
    return Calls(svc_app.client, site_headers)


@pytest.fixture
def calls_b(svc_app: Any, site_b_headers: dict[str, str]) -> Calls:
    """Calls as the instance admin in ``site_b``."""
    return Calls(svc_app.client, site_b_headers)
