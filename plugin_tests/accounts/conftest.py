"""Fixtures for the accounts tests: users and site members made directly, not through /users."""

from __future__ import annotations

import asyncio
import email
import email.policy
import re
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from plugins.access.api import role_by_system_key, set_membership
from plugins.accounts.service import create_user

MEMBER_PASSWORD = "member-password-1"


@dataclass(frozen=True)
class Member:
    """A user made for a test: id, email and password."""

    id: str
    email: str
    password: str = MEMBER_PASSWORD


@pytest.fixture
def make_member(svc_app: Any) -> Callable[..., Awaitable[Member]]:
    """``await make_member(site_id, role="subscriber", email=None, password=...)`` -> ``Member``.

    ``site_id`` may be ``None`` (a user with no membership) or a list of sites.
    """
    async def make(site_id: str | list[str] | None, *, role: str = "subscriber", email: str | None = None,
                   password: str = MEMBER_PASSWORD) -> Member:
        email = email or f"u-{uuid.uuid4().hex[:10]}@example.com"
        sites = [] if site_id is None else [site_id] if isinstance(site_id, str) else site_id
        async with svc_app.kernel.db.begin() as conn:
            user_id = await create_user(svc_app.kernel, conn, email=email, password=password)
            for one in sites:
                role_row = await role_by_system_key(conn, one, role)
                await set_membership(conn, one, user_id, role_row["id"])
        return Member(user_id, email, password)

    return make


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


class Mailbox:
    """An aiosmtpd handler keeping every message: the real SMTP peer of the email tests."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []
        self.port = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"

    def messages(self, to: str | None = None) -> list[Any]:
        """The parsed messages received so far (optionally only those to ``to``)."""
        parsed = [email.message_from_bytes(e.content, policy=email.policy.default) for e in self.envelopes]
        return [m for m in parsed if to is None or to in m["To"]]

    async def wait_for(self, count: int = 1, to: str | None = None, timeout: float = 10.0) -> list[Any]:
        """Poll until ``count`` messages (to ``to``) arrived; mail is sent after the response."""
        deadline = time.monotonic() + timeout
        while len(self.messages(to)) < count:
            assert time.monotonic() < deadline, f"expected {count} email(s), got {len(self.messages(to))}"
            await asyncio.sleep(0.02)
        return self.messages(to)

    @staticmethod
    def token(message: Any) -> str:
        """The ``token`` of the link in a message's text body."""
        found = re.search(r"[?&]token=([A-Za-z0-9_-]+)", message.get_content())
        assert found, message.get_content()
        return found.group(1)


@pytest.fixture
def mailbox() -> Any:
    """A local SMTP server (aiosmtpd on a free port); configure apps with
    ``make_app(smtp_host="127.0.0.1", smtp_port=mailbox.port)``."""
    from aiosmtpd.controller import Controller

    box = Mailbox()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        box.port = sock.getsockname()[1]
    controller = Controller(box, hostname="127.0.0.1", port=box.port)
    controller.start()
    yield box
    controller.stop()
