"""Fixtures for the accounts tests: members that are not logged in and logins. The local SMTP server
(``mailbox``) comes from svc's pytest plugin (``kernel.testing``)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kernel.testing import MEMBER_PASSWORD, Member


@pytest.fixture
def make_member(make_member: Callable[..., Awaitable[Member]]) -> Callable[..., Awaitable[Member]]:
    """svc's ``make_member`` (``kernel.testing``) without the login: these tests log in themselves,
    and count sessions. ``await make_member(site_id, role="subscriber", email=None, password=...)``."""
    return functools.partial(make_member, login=False)


@pytest.fixture
def login_as(svc_app: Any) -> Callable[..., Awaitable[dict[str, Any]]]:
    """``await login_as(email, password, site=None)`` -> the login answer's ``data`` (asserts 200)."""
    async def login(email: str, password: str = MEMBER_PASSWORD, site: str | None = None) -> dict[str, Any]:
        headers = {"X-Svc-Site": site} if site else {}
        resp = await svc_app.client.post("/api/v1/auth/login", json={"email": email, "password": password},
                                         headers=headers)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    return login
