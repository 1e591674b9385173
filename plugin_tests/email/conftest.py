"""Email tests: an app whose mailer talks SMTP to the test's own aiosmtpd server (``mailbox``)."""

from __future__ import annotations

from typing import Any

import pytest_asyncio

from kernel.testing import Calls

LAYOUT = '<div class="shell" style="color: #333" onclick="steal()">{{content}}<p>Footer of {{site}}</p></div>'


async def smtp_app(make_app: Any, mailbox: Any, **env: str) -> tuple[Any, Calls, str]:
    """A started app sending to ``mailbox``, with a fresh site; (app, calls as admin there, site)."""
    app = await make_app(smtp_host="127.0.0.1", smtp_port=mailbox.port,
                         env={"SVC_EMAIL_FROM": "News <news@example.com>",
                              "SVC_EMAIL_BASE_URL": "https://api.example.com", **env})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    return app, Calls(app.client, {**admin, "X-Svc-Site": site}), site


@pytest_asyncio.fixture
async def smtp(make_app, mailbox):
    return await smtp_app(make_app, mailbox)
