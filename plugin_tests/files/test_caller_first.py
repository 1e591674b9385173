"""Files routes check the caller before the body (issue 35, item 3): no token answers 401, a
member without the ``media:*`` action answers 403 naming it, whatever the body, the key in the
path or the declared type would have been refused for. The bodies here are all refusable, so
a 400, 413 or 415 means the route looked at them before at the caller."""

from __future__ import annotations

import pytest
import pytest_asyncio

from kernel.testing import API, Calls

pytestmark = pytest.mark.asyncio(loop_scope="module")

ID = "0190f4a6-7b1e-7c2d-8e3f-4a5b6c7d8e9f"
NOT_JSON = b'{"url": '
JSON = {"Content-Type": "application/json"}
RAW = {"Content-Type": "application/x-msdownload"}  # not in any allowlist: 415 if it were read
# (method, path, headers, body, the action a member needs)
CASES = [
    ("POST", "/files", JSON, NOT_JSON, "media:create"),
    ("POST", "/files", JSON, b'{"key": 7, "junk": true}', "media:create"),
    ("POST", "/files/upload-url", JSON, NOT_JSON, "media:create"),
    ("POST", "/files/upload-url", JSON, b'{"filename": ".hidden", "contentType": 1}', "media:create"),
    ("POST", "/files/import", JSON, NOT_JSON, "media:create"),
    ("POST", "/files/import", JSON, b'{"url": "http://127.0.0.1/x.jpg", "junk": 1}', "media:create"),
    ("POST", "/media/.hidden", RAW, b"MZ" + b"\x00" * 64, "media:create"),
    ("PATCH", f"/files/{ID}", JSON, NOT_JSON, "media:update"),
    ("DELETE", f"/media/{ID}.jpg", {}, None, "media:delete"),
    ("POST", "/transform-presets", JSON, NOT_JSON, "media:create"),
    ("PATCH", f"/transform-presets/{ID}", JSON, NOT_JSON, "media:update"),
]
IDS = [f"{m} {p} {i}" for i, (m, p, *_rest) in enumerate(CASES)]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def subscriber(shared_site) -> Calls:
    """A member of the shared site holding no media action but media:read (the subscriber role)."""
    return await shared_site.member()


@pytest.mark.parametrize(("method", "path", "headers", "body", "action"), CASES, ids=IDS)
async def test_no_token_is_401_before_the_body(shared_site, method, path, headers, body, action):
    resp = await shared_site.app.client.request(method, API + path, content=body,
                                                headers={**headers, "X-Svc-Site": shared_site.site})
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (401, "UNAUTHENTICATED"), resp.text


@pytest.mark.parametrize(("method", "path", "headers", "body", "action"), CASES, ids=IDS)
async def test_no_permission_is_403_before_the_body(subscriber, method, path, headers, body, action):
    error = await subscriber.err(method.lower(), path, 403, "PERMISSION_DENIED", content=body, headers=headers)
    assert error["extensions"]["reason"] == action


async def test_unsigned_raw_upload_checks_the_caller_before_the_key(shared_site, subscriber):
    """``PUT /files/upload/{key}`` stays public for signed URLs; unsigned, the guard answers for
    the caller before it looks at the key or the declared type."""
    path = "/files/upload/.hidden"
    anonymous = Calls(shared_site.app.client, {"X-Svc-Site": shared_site.site})
    error = await anonymous.err("put", path, 401, "UNAUTHENTICATED", content=b"MZ", headers=RAW)
    assert error["extensions"]["reason"] == "public_role"
    error = await subscriber.err("put", path, 403, "PERMISSION_DENIED", content=b"MZ", headers=RAW)
    assert error["extensions"]["reason"] == "media:create"
