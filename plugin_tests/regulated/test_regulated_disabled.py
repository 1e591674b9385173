"""With SVC_PLUGINS_DISABLED=regulated its routes answer 404 NOT_FOUND and nothing is encrypted
or masked (the option stays a plain schema option: no query names the field either)."""

import pytest
from regulated_setup import ENC, KEYS_ENV, PATIENT_FIELDS

from kernel.testing import Calls, disabled_with_dependents

ROUTES = [("get", f"{ENC}/keys"), ("post", f"{ENC}/keys/rotate"), ("post", f"{ENC}/keys/rewrap"),
          ("get", f"{ENC}/envelope"), ("post", f"{ENC}/envelope"), ("post", f"{ENC}/envelope/migrate"),
          ("get", "/admin/field-access-log"), ("post", "/admin/sar/export")]


@pytest.fixture
async def app(make_app):
    return await make_app(env={**KEYS_ENV, "SVC_PLUGINS_DISABLED": disabled_with_dependents("regulated")})


async def test_regulated_routes_are_gone(app):
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    for method, path in ROUTES:
        resp = await app.client.request(method, f"/api/v1{path}", headers=headers,
                                        json={} if method == "post" else None)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["errors"][0]["code"] == "NOT_FOUND"
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    assert not [p for p in paths if "/admin/encryption" in p or "/admin/sar" in p or "field-access" in p]
    calls = Calls(app.client, headers)
    await calls.collection("patients", PATIENT_FIELDS)
    made = await calls.create("patients", {"name": "a", "ssn": "plain"})
    assert (await calls.get("patients", made["id"]))["ssn"] == "plain"
