"""Helpers of the regulated plugin's tests: encryption keys, a site with a collection holding
sensitive fields, envelope mode on."""

from __future__ import annotations

import base64
from typing import Any

from kernel.testing import ADMIN_PASSWORD, Calls

KEY_A = base64.b64encode(b"a" * 32).decode()
KEY_B = base64.b64encode(b"b" * 32).decode()
KEY_C = base64.b64encode(b"c" * 32).decode()
KEYS_ENV = {"SVC_ENCRYPTION_KEY": f"main:{KEY_A}", "SVC_ENCRYPTION_KEYS": f"next:{KEY_B},later:{KEY_C}"}
ENC = "/admin/encryption"
PATIENT_FIELDS: dict[str, Any] = {
    "name": "string",
    "ssn": {"type": "text", "options": {"sensitive": True}},
    "diagnosis": {"type": "text", "options": {"sensitive": True}},
    "notes": {"type": "text", "options": {"sensitive": True}},
    "ward": "string",
}


async def site_calls(app: Any) -> tuple[str, Calls]:
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site_id = await app.create_site(admin)
    return site_id, Calls(app.client, {**admin, "X-Svc-Site": site_id})


async def envelope_on(calls: Calls, enabled: bool = True) -> dict[str, Any]:
    state = await calls.ok("post", f"{ENC}/envelope", json={"enabled": enabled, "password": ADMIN_PASSWORD})
    while not state["done"]:
        state = await calls.ok("post", f"{ENC}/envelope/migrate", json={})
    return state
