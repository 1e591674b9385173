"""Files refusals on one shared app (local storage), a site per test where a test writes: unknown
ids and keys, bodies that are not JSON, presigned-upload, import and upload-policy bodies that
cannot be right, and one site's upload policy that is not another's. (A call without a token is
tests/http/test_auth_before_body.py's.)"""

from __future__ import annotations

import pytest

NO_ID = "01a2433a-0000-7000-8000-000000000000"


@pytest.mark.parametrize(("method", "path", "body", "code"), [
    ("get", f"/files/{NO_ID}", None, "RECORD_NOT_FOUND"), ("patch", f"/files/{NO_ID}", {"title": "x"}, "RECORD_NOT_FOUND"),
    ("delete", f"/files/{NO_ID}", None, "RECORD_NOT_FOUND"), ("get", f"/assets/{NO_ID}", None, "RECORD_NOT_FOUND"),
    ("get", "/media/nothing.jpg", None, "RECORD_NOT_FOUND"), ("delete", "/media/nothing.jpg", None, "RECORD_NOT_FOUND"),
    ("post", "/files", {"key": "no-such-pending-upload"}, "RECORD_NOT_FOUND"),
])
async def test_an_unknown_file_is_404(shared_site, method, path, body, code):
    await shared_site.calls.err(method, path, 404, code, **({"json": body} if body is not None else {}))


@pytest.mark.parametrize(("method", "path"), [
    ("post", "/files"), ("post", "/files/upload-url"), ("post", "/files/import"), ("post", "/transform-presets"),
    ("patch", f"/files/{NO_ID}"), ("put", "/uploads/config")])
async def test_a_body_that_is_not_json_is_400(shared_site, method, path):
    await shared_site.calls.err(method, path, 400, "VALIDATION_FAILED", path_is=["body"], content=b"{nope",
                                headers={"Content-Type": "application/json"})


@pytest.mark.parametrize("body", [
    [], {}, {"filename": ""}, {"filename": 5, "contentType": "image/png"}, {"filename": "a.png", "contentType": 5},
    {"filename": "a.png", "contentType": "image/png", "extra": 1}, {"filename": "x" * 1000, "contentType": "image/png"}])
async def test_an_upload_url_body_that_cannot_be_right_is_400(shared_site, body):
    await shared_site.calls.err("post", "/files/upload-url", 400, "VALIDATION_FAILED", json=body)


@pytest.mark.parametrize("body", [
    [], {}, {"url": ""}, {"url": 5}, {"url": "ftp://example.com/a.png"}, {"url": "https://user:pw@example.com/a.png"},
    {"url": "not a url"}, {"url": "https://example.com/a.png", "data": []}])
async def test_an_import_body_that_cannot_be_right_is_400(shared_site, body):
    await shared_site.calls.err("post", "/files/import", 400, "VALIDATION_FAILED", json=body)


@pytest.mark.parametrize("body", [
    [], {"maxBytes": 0}, {"maxBytes": -1}, {"maxBytes": "big"}, {"maxBytes": True}, {"maxBytes": 6 * 1024 ** 3},
    {"allowedMimeTypes": "image/png"}, {"allowedMimeTypes": ["application/x-not-in-the-catalogue"]},
    {"surprise": 1}])
async def test_an_upload_policy_that_cannot_be_right_is_400(shared_site, body):
    await shared_site.calls.err("put", "/uploads/config", 400, "VALIDATION_FAILED", json=body)


async def test_a_sites_upload_policy_is_not_anothers(shared_site):
    a, b = await shared_site.new_site("fa"), await shared_site.new_site("fb")
    before = await b.ok("get", "/uploads/config")
    await a.ok("put", "/uploads/config", json={"maxBytes": 1234, "allowedMimeTypes": ["image/png"]})
    mine = await a.ok("get", "/uploads/config")
    assert (mine["maxBytes"], mine["allowedMimeTypes"]) == (1234, ["image/png"])
    assert await b.ok("get", "/uploads/config") == before
