"""``GET /assets/{site_id}/{id}``: the asset route that names its site in the path, for
``<img>``, ``<video>`` and CSS, which send no ``X-Svc-Site`` (docs/files.md#serving-files-to-a-front-end).
It answers exactly as ``/assets/{id}`` with the site in the header: the same permissions (403
and 404 alike), caching headers, ETag and 304, transforms; and it never serves another site's file."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from .corpus import gradient_jpeg

pytestmark = pytest.mark.parametrize("svc_app", ["local"], indirect=True)  # storage is not the subject
API = "/api/v1"


async def _public_role(calls) -> str:
    roles = await calls.ok("get", "/roles")
    return next(r["id"] for r in roles if r["systemKey"] == "public")


async def _put(calls, name: str, size=(400, 200), folder: str | None = None) -> dict:
    record = await calls.ok("put", f"/files/upload/{name}", status=201, content=gradient_jpeg(size),
                            headers={"Content-Type": "image/jpeg"})
    if folder is not None:
        record = await calls.ok("patch", f"/files/{record['id']}", json={"folder": folder})
    return record


def _same(a, b) -> None:
    """Two answers of the asset routes alike: status, body and every header that matters."""
    assert (a.status_code, a.content) == (b.status_code, b.content)
    for name in ("content-type", "cache-control", "etag", "content-disposition", "x-content-type-options"):
        assert a.headers.get(name) == b.headers.get(name), name


async def test_the_path_names_the_site_and_everything_else_is_the_same(svc_app, calls, site, make_member):
    client = svc_app.client
    photo = await _put(calls, "photo.jpg", folder="public")
    hidden = await _put(calls, "hidden.jpg", folder="private")
    path, header = f"{API}/assets/{site}/{photo['id']}", f"{API}/assets/{photo['id']}"

    # No media:read for the public role yet: 403 on both routes, alike.
    refused = await client.get(path)
    assert (refused.status_code, refused.json()["errors"][0]["code"]) == (403, "PERMISSION_DENIED")
    _same(refused, await client.get(header, headers={"X-Svc-Site": site}))

    # The public role may read the files of the folder "public" only (the call of docs/files.md).
    await calls.ok("post", "/roles/public/permissions", status=201, json={
        "collection": "*", "action": "media:read", "conditions": {"folder": {"_eq": "public"}}})
    plain = await client.get(path)  # what <img src> sends: no header at all
    assert plain.status_code == 200 and plain.headers["content-type"] == "image/jpeg"
    assert plain.headers["cache-control"] == "public, max-age=86400"
    assert plain.headers["etag"] == f'"{photo["checksum"]}"' and plain.headers["x-content-type-options"] == "nosniff"
    assert plain.headers["content-disposition"].startswith("inline;")
    _same(plain, await client.get(header, headers={"X-Svc-Site": site}))
    again = await client.get(path, headers={"If-None-Match": plain.headers["etag"]})
    assert again.status_code == 304 and again.content == b""

    # Transforms and presets, as on /assets/{id}.
    await calls.ok("post", "/transform-presets", status=201, json={"key": "thumb", "name": "T", "dsl": "width=40"})
    for params, size in (({"width": 100, "format": "png"}, (100, 50)), ({"preset": "thumb"}, (40, 20))):
        small = await client.get(path, params=params)
        assert small.status_code == 200 and Image.open(io.BytesIO(small.content)).size == size, small.text
        _same(small, await client.get(header, params=params, headers={"X-Svc-Site": site}))
        cached = await client.get(path, params=params, headers={"If-None-Match": small.headers["etag"]})
        assert cached.status_code == 304
    bad = await client.get(path, params={"width": 0})
    assert (bad.status_code, bad.json()["errors"][0]["path"]) == (400, ["query", "width"])

    # A file the public role may not read is 404 as on /assets/{id}; an unknown one too.
    for file_id in (hidden["id"], "0190a000-0000-7000-8000-000000000000"):
        missing = await client.get(f"{API}/assets/{site}/{file_id}")
        assert (missing.status_code, missing.json()["errors"][0]["code"]) == (404, "RECORD_NOT_FOUND")
        _same(missing, await client.get(f"{API}/assets/{file_id}", headers={"X-Svc-Site": site}))

    # A credential still counts where one is sent: a member with media:read on every file.
    role = await calls.ok("post", "/roles", status=201, json={"name": "Readers"})
    await calls.grant([{"collection": "*", "action": "media:read", "fields": ["*"]}], {"roleId": role["id"]})
    reader = await make_member(site, role["id"])
    mine = await client.get(f"{API}/assets/{site}/{hidden['id']}", headers={"Authorization": reader.headers[
        "Authorization"]})
    assert mine.status_code == 200 and mine.headers["cache-control"] == "private, max-age=86400"
    # The files list binds $CURRENT_USER as the items lists do (docs/access.md#variables-in-list-filters).
    params = {"filter[uploadedBy][_eq]": "$CURRENT_USER", "sort": "key"}
    assert [f["key"] for f in await calls.ok("get", "/files", params=params)] == ["hidden.jpg", "photo.jpg"]
    assert await calls.ok("get", "/files", params=params, headers=reader.headers) == []


async def test_a_site_path_never_serves_another_sites_file(svc_app, calls, calls_b, site, site_b, make_member):
    client = svc_app.client
    a = await _put(calls, "a.jpg")
    b = await _put(calls_b, "b.jpg", size=(300, 300))
    for each in (calls, calls_b):  # both public roles may read every file of their own site
        await each.grant([{"collection": "*", "action": "media:read", "fields": ["*"]}],
                         {"roleId": await _public_role(each)})
    assert (await client.get(f"{API}/assets/{site}/{a['id']}")).content != (
        await client.get(f"{API}/assets/{site_b}/{b['id']}")).content
    # B's path with A's id, A's path with B's id: not found, with or without a transform, whatever
    # X-Svc-Site says (the path names the site; the header is not read).
    for path in (f"{API}/assets/{site_b}/{a['id']}", f"{API}/assets/{site}/{b['id']}"):
        for params in ({}, {"width": 10}):
            for headers in ({}, {"X-Svc-Site": site}, {"X-Svc-Site": site_b}):
                resp = await client.get(path, params=params, headers=headers)
                assert (resp.status_code, resp.json()["errors"][0]["code"]) == (404, "RECORD_NOT_FOUND"), path
    # B's admin token is bound to B: through A's path it is refused, as with X-Svc-Site naming A.
    b_admin = await make_member(site_b, "admin")
    auth = {"Authorization": b_admin.headers["Authorization"]}
    resp = await client.get(f"{API}/assets/{site}/{a['id']}", headers=auth)
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (401, "UNAUTHENTICATED")
    _same(resp, await client.get(f"{API}/assets/{a['id']}", headers={**auth, "X-Svc-Site": site}))
    # An unknown or malformed site is 404 SITE_NOT_FOUND.
    for other in ("nosuchsite", "x" * 65, "BAD%20SITE"):
        resp = await client.get(f"{API}/assets/{other}/{a['id']}")
        assert (resp.status_code, resp.json()["errors"][0]["code"]) == (404, "SITE_NOT_FOUND"), other
