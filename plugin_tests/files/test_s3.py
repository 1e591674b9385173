"""On S3 (moto's server mode): the presigned URL is S3's own, the client PUTs to the store
directly, and ``POST /files`` runs the whole guard on what it finds there."""

from __future__ import annotations

import httpx
import pytest

from .conftest import error_code
from .corpus import SVG_HOSTILE, gradient_jpeg


@pytest.fixture
def s3_app(svc_app):
    assert "s3://" in svc_app.kernel.storage.describe()
    return svc_app


@pytest.mark.parametrize("svc_app", ["s3"], indirect=True)  # the files tests' app, on S3 only
async def test_presigned_put_round_trip_through_s3(s3_app, calls, site):
    reserved = await calls.ok("post", "/files/upload-url", status=201,
                              json={"filename": "photo.jpg", "contentType": "image/jpeg"})
    assert reserved["url"].startswith(s3_app.kernel.settings.s3_endpoint_url) and "X-Amz-Signature" in reserved["url"]
    data = gradient_jpeg((120, 60))
    async with httpx.AsyncClient() as outside:
        put = await outside.put(reserved["url"], content=data, headers={"Content-Type": "image/jpeg"})
        assert put.status_code == 200, put.text
    record = await calls.ok("post", "/files", status=201, json={"key": reserved["key"], "title": "Photo",
                                                                "tags": ["s3"]})
    assert (record["key"], record["title"], record["tags"], record["width"]) == ("photo.jpg", "Photo", ["s3"], 120)
    assert (await calls.call("get", f"/assets/{record['id']}")).content == data
    thumb = await calls.call("get", f"/assets/{record['id']}", params={"width": 12})
    assert thumb.status_code == 200
    keys = await s3_app.kernel.storage.list(f"{site}/")
    assert [k for k in keys if "/files/" in k] and [k for k in keys if "/derivatives/" in k]
    assert not [k for k in keys if "/uploads/" in k]
    # Registered once: the pending key is gone.
    await calls.err("post", "/files", 404, "RECORD_NOT_FOUND", json={"key": reserved["key"]})

    # Hostile bytes PUT straight to S3 never become a file, and are deleted from the bucket.
    reserved = await calls.ok("post", "/files/upload-url", status=201,
                              json={"filename": "x.svg", "contentType": "image/svg+xml"})
    async with httpx.AsyncClient() as outside:
        put = await outside.put(reserved["url"], content=SVG_HOSTILE["onload"],
                                headers={"Content-Type": "image/svg+xml"})
        assert put.status_code == 200
    resp = await calls.call("post", "/files", json={"key": reserved["key"]})
    assert (resp.status_code, error_code(resp)) == (422, "FILE_ACTIVE_CONTENT")
    assert not [k for k in await s3_app.kernel.storage.list(f"{site}/") if "/uploads/" in k]
    await calls.ok("delete", f"/files/{record['id']}", status=204)
    assert await s3_app.kernel.storage.list(f"{site}/") == []
