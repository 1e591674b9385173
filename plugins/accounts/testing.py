"""The accounts plugin's test support, a pytest plugin (entry point ``svc_accounts`` in the
``pytest11`` group, beside the kernel's ``svc``): logging in through ``/auth/login``
(``app.login()``). The kernel's harness (``kernel.testing``) knows no plugin's routes;
``harness_helper`` adds these to its classes.
"""

from __future__ import annotations

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, TestApp, harness_helper


@harness_helper(TestApp)
async def login(
    app: TestApp, email: str = ADMIN_EMAIL, password: str = ADMIN_PASSWORD, site: str | None = None
) -> str:
    headers = {"X-Svc-Site": site} if site else {}
    resp = await app.client.post(
        "/api/v1/auth/login", json={"email": email, "password": password}, headers=headers
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["token"]
