"""Fixtures for the accounts tests: members that are not logged in, logins, and a local SMTP server."""

from __future__ import annotations

import asyncio
import email
import email.policy
import functools
import re
import socket
import time
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
